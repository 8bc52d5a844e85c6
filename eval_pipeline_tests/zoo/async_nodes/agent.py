"""Weather agent in the style of LangGraph's "ReAct agent from scratch" how-to, async.

Sources imitated: langchain-ai/langgraph: docs/docs/how-tos/react-agent-from-scratch.ipynb
(at commit 23961cff61a42b52525f3b20b4094d8d2fba1744; examples/react-agent-from-scratch.ipynb
is now only a "moved" stub), converted to async the way langchain-ai/docs:
src/oss/use-graph-api.mdx ("Async": ``async def`` nodes, ``await llm.ainvoke(...)``,
``graph.ainvoke``) says to.

Habits kept: ``AgentState`` TypedDict with ``Sequence[BaseMessage]`` + ``add_messages``;
a module-level ``model = ChatOpenAI(model="gpt-4o-mini")`` rebound with
``model = model.bind_tools(tools)``; ``tools_by_name``; a hand-written tool node that
JSON-encodes each tool result (``content=json.dumps(tool_result)``, so the answer quotes
it); ``call_model(state, config)`` building the ``SystemMessage`` inside the node and
passing ``config`` on; ``should_continue`` returning "continue"/"end" mapped to
"tools"/END; ``workflow.set_entry_point("agent")``; module-level ``graph``. Here every
node is ``async def`` and awaits ``ainvoke``.

Async only: drive it with ``ainvoke`` / ``astream`` (``invoke`` raises, no sync node).
Input: ``{"messages": [HumanMessage(...)]}``. Answer: last AI message of ``messages``.
"""

import json
from collections.abc import Sequence
from typing import Annotated, TypedDict

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, StateGraph
from langgraph.graph.message import add_messages

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}


class AgentState(TypedDict):
    """The state of the agent."""

    # add_messages is a reducer
    messages: Annotated[Sequence[BaseMessage], add_messages]


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

model = model.bind_tools(tools)

tools_by_name = {tool.name: tool for tool in tools}


# Define our tool node
async def tool_node(state: AgentState):
    outputs = []
    for tool_call in state["messages"][-1].tool_calls:
        tool_result = await tools_by_name[tool_call["name"]].ainvoke(tool_call["args"])
        outputs.append(
            ToolMessage(
                content=json.dumps(tool_result),
                name=tool_call["name"],
                tool_call_id=tool_call["id"],
            )
        )
    return {"messages": outputs}


# Define the node that calls the model
async def call_model(
    state: AgentState,
    config: RunnableConfig,
):
    # this is similar to customizing the create_react_agent with 'prompt' parameter
    system_prompt = SystemMessage(SYSTEM_PROMPT)
    response = await model.ainvoke([system_prompt] + state["messages"], config)
    # We return a list, because this will get added to the existing list
    return {"messages": [response]}


# Define the conditional edge that determines whether to continue or not
def should_continue(state: AgentState):
    messages = state["messages"]
    last_message = messages[-1]
    # If there is no function call, then we finish
    if not last_message.tool_calls:
        return "end"
    # Otherwise if there is, we continue
    else:
        return "continue"


# Define a new graph
workflow = StateGraph(AgentState)

# Define the two nodes we will cycle between
workflow.add_node("agent", call_model)
workflow.add_node("tools", tool_node)

# Set the entrypoint as `agent`
# This means that this node is the first one called
workflow.set_entry_point("agent")

# We now add a conditional edge
workflow.add_conditional_edges(
    "agent",
    should_continue,
    {
        # If `tools`, then we call the tool node.
        "continue": "tools",
        # Otherwise we finish.
        "end": END,
    },
)

# We now add a normal edge from `tools` to `agent`.
workflow.add_edge("tools", "agent")

graph = workflow.compile()
