"""Weather agent exactly in the shape of the current LangGraph quickstart (Graph API).

Source imitated: langchain-ai/docs: src/oss/langgraph/quickstart.mdx, tab "Use the Graph
API" (the calculator agent), steps 1-6 and its "Full code example".

Habits kept: ``model = init_chat_model("<bare model name>", temperature=0)``; ``@tool``
from ``langchain.tools``; ``tools_by_name`` and ``model_with_tools`` at module level; the
page's OWN ``class MessagesState(TypedDict)`` whose ``messages`` reducer is
``operator.add`` (plain list concatenation, not ``add_messages``: no ids assigned, no
replace-by-id) plus an ``llm_calls: int`` counter; sync ``llm_call`` node with the
``SystemMessage`` built inline; hand-written ``tool_node``; ``should_continue ->
Literal["tool_node", END]``; ``agent_builder`` compiled into a module-level variable named
``agent`` (not ``graph``).

Input: ``{"messages": [HumanMessage(...)]}``. Answer: last AI message of ``messages``;
``llm_calls`` in the final state counts model calls.
"""

import operator
from typing import Literal

from langchain.chat_models import init_chat_model
from langchain.messages import AnyMessage, SystemMessage, ToolMessage
from langchain.tools import tool
from langgraph.graph import END, START, StateGraph
from typing_extensions import Annotated, TypedDict  # noqa: UP035 (the quickstart's import)

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}

# Step 1: Define tools and model

model = init_chat_model("gpt-4o-mini", temperature=0)


# Define tools
@tool
def get_weather(city: str) -> str:
    """Get the current weather in `city`.

    Args:
        city: City name
    """
    return WEATHER.get(city.lower(), "unknown city")


@tool
def get_time(city: str) -> str:
    """Get the local time in `city`.

    Args:
        city: City name
    """
    return TIMES.get(city.lower(), "unknown city")


# Augment the LLM with tools
tools = [get_weather, get_time]
tools_by_name = {tool.name: tool for tool in tools}
model_with_tools = model.bind_tools(tools)


# Step 2: Define state


class MessagesState(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]
    llm_calls: int


# Step 3: Define model node


def llm_call(state: MessagesState):
    """LLM decides whether to call a tool or not"""

    return {
        "messages": [
            model_with_tools.invoke([SystemMessage(content=SYSTEM_PROMPT)] + state["messages"])
        ],
        "llm_calls": state.get("llm_calls", 0) + 1,
    }


# Step 4: Define tool node


def tool_node(state: MessagesState):
    """Performs the tool call"""

    result = []
    for tool_call in state["messages"][-1].tool_calls:
        tool = tools_by_name[tool_call["name"]]
        observation = tool.invoke(tool_call["args"])
        result.append(ToolMessage(content=observation, tool_call_id=tool_call["id"]))
    return {"messages": result}


# Step 5: Define logic to determine whether to end


# Conditional edge function to route to the tool node or end based upon whether the LLM
# made a tool call
def should_continue(state: MessagesState) -> Literal["tool_node", END]:
    """Decide if we should continue the loop or stop based upon whether the LLM made a tool
    call"""

    messages = state["messages"]
    last_message = messages[-1]

    # If the LLM makes a tool call, then perform an action
    if last_message.tool_calls:
        return "tool_node"

    # Otherwise, we stop (reply to the user)
    return END


# Step 6: Build agent

# Build workflow
agent_builder = StateGraph(MessagesState)

# Add nodes
agent_builder.add_node("llm_call", llm_call)
agent_builder.add_node("tool_node", tool_node)

# Add edges to connect nodes
agent_builder.add_edge(START, "llm_call")
agent_builder.add_conditional_edges("llm_call", should_continue, ["tool_node", END])
agent_builder.add_edge("tool_node", "llm_call")

# Compile the agent
agent = agent_builder.compile()
