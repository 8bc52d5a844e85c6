"""Weather agent whose nodes route with ``Command`` instead of edges.

Sources imitated: langchain-ai/docs: src/oss/langgraph/graph-api-send-command.mdx
("Combine control flow and state updates with Command": ``def node_a(state) ->
Command[Literal["node_b", "node_c"]]`` returning ``Command(update=..., goto=...)``, only
``builder.add_edge(START, "node_a")``, "NOTE: there are no edges between nodes"); same
section in src/oss/use-graph-api.mdx of the older docs. The tool-executing node that
returns a ``Command`` is the one src/oss/multi-agent-custom.mdx describes ("implement your
own tool-executing node ... returns a list of them").

Habits kept: the return annotation ``Command[Literal[...]]`` on each node (the docs say it
is needed for rendering); ``goto=END`` to finish; ``builder.add_node(fn)`` by function
name; only the START edge; module-level ``llm = init_chat_model("openai:gpt-4o-mini")``;
``MessagesState``; module-level ``graph``.

Input: ``{"messages": [HumanMessage(...)]}``. Answer: last AI message of ``messages``.
"""

from typing import Literal

from langchain.chat_models import init_chat_model
from langchain_core.messages import SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

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


tools = [get_weather, get_time]
tools_by_name = {t.name: t for t in tools}

llm = init_chat_model("openai:gpt-4o-mini")


def call_model(state: MessagesState) -> Command[Literal["call_tools", "__end__"]]:
    response = llm.bind_tools(tools).invoke([SystemMessage(SYSTEM_PROMPT)] + state["messages"])
    # this is a replacement for a conditional edge function
    goto = "call_tools" if response.tool_calls else END
    # note how Command allows you to BOTH update the graph state AND route to the next node
    return Command(
        # this is the state update
        update={"messages": [response]},
        # this is a replacement for an edge
        goto=goto,
    )


def call_tools(state: MessagesState) -> Command[Literal["call_model"]]:
    results = []
    for tool_call in state["messages"][-1].tool_calls:
        observation = tools_by_name[tool_call["name"]].invoke(tool_call["args"])
        results.append(ToolMessage(content=observation, tool_call_id=tool_call["id"]))
    return Command(update={"messages": results}, goto="call_model")


builder = StateGraph(MessagesState)
builder.add_edge(START, "call_model")
builder.add_node(call_model)
builder.add_node(call_tools)
# NOTE: there are no edges between the nodes!

graph = builder.compile()
