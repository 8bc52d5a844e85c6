"""Weather agent with the LangGraph Functional API, async tasks and entrypoint.

Sources imitated: langchain-ai/langgraph:
docs/docs/how-tos/react-agent-from-scratch-functional.ipynb (at commit
23961cff61a42b52525f3b20b4094d8d2fba1744; the how-to "ReAct agent from scratch (Functional
API)"), made async as libs/langgraph/langgraph/func/__init__.py's ``task`` docstring
("Example: Async Task": ``@task async def``, ``@entrypoint() async def``, ``ainvoke``).

Habits kept: ``model = ChatOpenAI(model="gpt-4o-mini")`` at module level and
``model.bind_tools(tools)`` inside the model task; ``call_model(messages)`` and
``call_tool(tool_call)`` tasks (the tool task builds ``ToolMessage(content=observation,
tool_call_id=...)`` itself); tool calls fanned out as task futures and gathered;
``add_messages`` to fold them in; the entrypoint RETURNS THE FINAL AIMessage
(``return llm_response``), as that how-to does. Here the tasks are ``async def`` and
awaited, and the futures are awaited with ``asyncio.gather`` (the func docstring's own
async example returns ``asyncio.gather(*futures)`` without awaiting it).

Async only: ``await agent.ainvoke([...])`` (``invoke`` cannot run async tasks).
Input: a plain LIST of messages (OpenAI-style dicts or messages), not a dict.
Output: the final AIMessage itself, not a ``{"messages": ...}`` dict and not a list.
"""

import asyncio

from langchain_core.messages import SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.func import entrypoint, task
from langgraph.graph.message import add_messages

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}

model = ChatOpenAI(model="gpt-4o-mini")


@tool
def get_weather(city: str):
    """Call to get the weather in a city."""
    return WEATHER.get(city.lower(), "unknown city")


@tool
def get_time(city: str):
    """Call to get the local time in a city."""
    return TIMES.get(city.lower(), "unknown city")


tools = [get_weather, get_time]

tools_by_name = {tool.name: tool for tool in tools}


@task
async def call_model(messages):
    """Call model with a sequence of messages."""
    response = await model.bind_tools(tools).ainvoke(
        [SystemMessage(content=SYSTEM_PROMPT)] + messages  # noqa: RUF005 (as the docs write it)
    )
    return response


@task
async def call_tool(tool_call):
    tool = tools_by_name[tool_call["name"]]
    observation = await tool.ainvoke(tool_call["args"])
    return ToolMessage(content=observation, tool_call_id=tool_call["id"])


@entrypoint()
async def agent(messages):
    llm_response = await call_model(messages)
    while True:
        if not llm_response.tool_calls:
            break

        # Execute tools
        tool_result_futures = [call_tool(tool_call) for tool_call in llm_response.tool_calls]
        tool_results = await asyncio.gather(*tool_result_futures)

        # Append to message list
        messages = add_messages(messages, [llm_response, *tool_results])

        # Call model again
        llm_response = await call_model(messages)

    return llm_response
