"""Weather agent in the style of the LangGraph "build a basic chatbot / add tools" tutorial.

Source imitated: langchain-ai/docs: src/oss/2-add-tools.mdx (section "9. Use prebuilts"),
with the model line from its chat-model tabs, src/snippets/chat-model-tabs.mdx
(``llm = init_chat_model("openai:gpt-4.1")``); same tutorial in
langchain-ai/langgraph: docs/docs/tutorials/get-started/2-add-tools.md.

Habits kept: a TypedDict ``State`` with ``Annotated[list, add_messages]``; a module-level
``llm`` and ``llm_with_tools = llm.bind_tools(tools)``; a plain sync ``def chatbot(state)``
node calling the module-level ``llm_with_tools.invoke``; the prebuilt ``ToolNode`` and
``tools_condition``; a ``graph_builder`` compiled at import into a module-level ``graph``.
The tutorial's chatbot has no system prompt; here it prepends ``SYSTEM_PROMPT`` (the only
addition).

Input: ``{"messages": [HumanMessage(...)]}``. Answer: last AI message of ``messages``.
"""

from typing import Annotated

from langchain.chat_models import init_chat_model
from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return WEATHER.get(city.lower(), "unknown city")


@tool
def get_time(city: str) -> str:
    """Get the local time in a city."""
    return TIMES.get(city.lower(), "unknown city")


class State(TypedDict):
    messages: Annotated[list, add_messages]


graph_builder = StateGraph(State)

llm = init_chat_model("openai:gpt-4o-mini")

tools = [get_weather, get_time]
llm_with_tools = llm.bind_tools(tools)


def chatbot(state: State):
    return {
        "messages": [
            llm_with_tools.invoke([SystemMessage(content=SYSTEM_PROMPT)] + state["messages"])
        ]
    }


graph_builder.add_node("chatbot", chatbot)

tool_node = ToolNode(tools=tools)
graph_builder.add_node("tools", tool_node)

graph_builder.add_conditional_edges(
    "chatbot",
    tools_condition,
)
# Any time a tool is called, we return to the chatbot to decide the next step
graph_builder.add_edge("tools", "chatbot")
graph_builder.add_edge(START, "chatbot")
graph = graph_builder.compile()
