"""Weather agent with the LangGraph Functional API, as the current quickstart writes it.

Source imitated: langchain-ai/docs: src/oss/langgraph/quickstart.mdx, tab "Use the
Functional API" (same agent in src/oss/langgraph/workflows-agents.mdx, "Agents").

Habits kept: ``model = init_chat_model("<bare model name>", temperature=0)`` (provider
inferred from the name), ``tools_by_name`` and ``model_with_tools`` at module level; a sync
``@task def call_llm(messages)`` that prepends the ``SystemMessage`` and calls
``model_with_tools.invoke``; a sync ``@task def call_tool(tool_call)`` that returns
``tool.invoke(tool_call)`` (a ToolMessage, since it is given the whole ToolCall);
``@entrypoint() def agent(messages: list[BaseMessage])`` looping ``.result()`` on the task
futures and folding them in with ``add_messages``.

Input: a plain LIST of messages, ``agent.invoke([HumanMessage(...)])`` (not a dict: a
``{"messages": [...]}`` input reaches ``[SystemMessage] + messages`` and raises TypeError).
Output: the LIST of messages (``return messages``), whose last item is the final AIMessage;
not a ``{"messages": ...}`` dict.
"""

from langchain.chat_models import init_chat_model
from langchain.messages import SystemMessage, ToolCall
from langchain.tools import tool
from langchain_core.messages import BaseMessage
from langgraph.func import entrypoint, task
from langgraph.graph import add_messages

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}

model = init_chat_model("gpt-4o-mini", temperature=0)


# Define tools
@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: City name
    """
    return WEATHER.get(city.lower(), "unknown city")


@tool
def get_time(city: str) -> str:
    """Get the local time in a city.

    Args:
        city: City name
    """
    return TIMES.get(city.lower(), "unknown city")


# Augment the LLM with tools
tools = [get_weather, get_time]
tools_by_name = {tool.name: tool for tool in tools}
model_with_tools = model.bind_tools(tools)


@task
def call_llm(messages: list[BaseMessage]):
    """LLM decides whether to call a tool or not"""
    return model_with_tools.invoke([SystemMessage(content=SYSTEM_PROMPT)] + messages)  # noqa: RUF005


@task
def call_tool(tool_call: ToolCall):
    """Performs the tool call"""
    tool = tools_by_name[tool_call["name"]]
    return tool.invoke(tool_call)


@entrypoint()
def agent(messages: list[BaseMessage]):
    model_response = call_llm(messages).result()

    while True:
        if not model_response.tool_calls:
            break

        # Execute tools
        tool_result_futures = [call_tool(tool_call) for tool_call in model_response.tool_calls]
        tool_results = [fut.result() for fut in tool_result_futures]
        messages = add_messages(messages, [model_response, *tool_results])
        model_response = call_llm(messages).result()

    messages = add_messages(messages, model_response)
    return messages
