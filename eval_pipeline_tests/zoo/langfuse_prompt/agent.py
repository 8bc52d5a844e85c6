"""Weather agent that fetches its system prompt from Langfuse on every model call.

Sources imitated: the "prompt from Langfuse, hard-coded fallback" pattern of blog posts on
Langfuse prompt management with LangGraph, e.g. woliveiras.com
"observability-ai-agents/ch-19-langfuse-prompt-management-playground" (prompts.py: fetch by
label with a cache fallback, used from graph.py) and docs.curaway.ai
"langfuse-prompt-management-recommendation" (``get_client().get_prompt(...)`` with the old
hard-coded prompt as fallback); the SDK calls as in langfuse.com/docs/prompts/get-started
(``Langfuse().get_prompt(name, label="production")``, ``prompt.prompt``). Not a file of a
GitHub repository: there is no canonical source file for this pattern. The graph is the
chatbot tutorial's (langchain-ai/docs: src/oss/2-add-tools.mdx).

Habits kept: ``_get_system_prompt()`` at module level builds a ``Langfuse()`` client (keys
and host from LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY / LANGFUSE_BASE_URL) and asks for
``get_prompt("weather/assistant", label="production")``; a text prompt gives
``prompt.prompt``, a chat prompt its system message; ANY exception (no keys, server down,
prompt missing) silently falls back to FALLBACK_SYSTEM_PROMPT. It is called inside the
node, on every model call (the SDK caches the prompt 60 s). Sync nodes, module-level
``llm = ChatOpenAI(model="gpt-4o-mini")``, ``ToolNode`` + ``tools_condition``, module-level
``graph``.

Input: ``{"messages": [HumanMessage(...)]}``. Answer: last AI message of ``messages``.
"""

from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langfuse import Langfuse
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

FALLBACK_SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."  # noqa: E501  # fmt: skip

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}


def _get_system_prompt() -> str:
    try:
        langfuse = Langfuse()
        prompt = langfuse.get_prompt("weather/assistant", label="production")
        if isinstance(prompt.prompt, str):
            return prompt.prompt
        return next(m["content"] for m in prompt.prompt if m.get("role") == "system")
    except Exception:
        return FALLBACK_SYSTEM_PROMPT


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return WEATHER.get(city.lower(), "unknown city")


@tool
def get_time(city: str) -> str:
    """Get the local time in a city."""
    return TIMES.get(city.lower(), "unknown city")


tools = [get_weather, get_time]
llm = ChatOpenAI(model="gpt-4o-mini")
llm_with_tools = llm.bind_tools(tools)


def chatbot(state: MessagesState):
    system_prompt = _get_system_prompt()
    messages = [SystemMessage(content=system_prompt)] + state["messages"]
    return {"messages": [llm_with_tools.invoke(messages)]}


graph_builder = StateGraph(MessagesState)
graph_builder.add_node("chatbot", chatbot)
graph_builder.add_node("tools", ToolNode(tools=tools))
graph_builder.add_conditional_edges("chatbot", tools_condition)
graph_builder.add_edge("tools", "chatbot")
graph_builder.add_edge(START, "chatbot")
graph = graph_builder.compile()
