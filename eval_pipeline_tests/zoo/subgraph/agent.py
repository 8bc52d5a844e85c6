"""Weather agent as a compiled subgraph added as a node of a parent graph.

Sources imitated: langchain-ai/docs: src/oss/langgraph/use-subgraphs.mdx ("Add a subgraph
as a node": parent and subgraph share a state key, the compiled subgraph is passed straight
to ``builder.add_node("node_1", subgraph)``; for multi-agent systems the shared key is
``messages``); older copy: langchain-ai/docs: src/oss/use-subgraphs.mdx and
langchain-ai/langgraph: docs/docs/how-tos/subgraph.md (the file examples/subgraph.ipynb
points to). The agent subgraph itself is the chatbot tutorial's (src/oss/2-add-tools.mdx):
``MessagesState``, ``ToolNode`` + ``tools_condition``.

Habits kept: ``subgraph_builder`` compiled into ``subgraph``; a parent ``builder`` over a
state that shares ``messages`` and adds a key of its own; a sync pre-processing node
(``prepare``: trims the question and records it in ``question``) before the subgraph node;
module-level ``graph = builder.compile()``. The model is a module-level
``ChatOpenAI(model="gpt-4o-mini")``.

The agent's messages (tool calls included) are written by nodes INSIDE the subgraph; the
parent only sees the subgraph node's final update. Stream with ``subgraphs=True`` to see
the tool calls as they happen.

Input: ``{"messages": [HumanMessage(...)]}``. Answer: last AI message of ``messages``.
"""

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

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
llm = ChatOpenAI(model="gpt-4o-mini")
llm_with_tools = llm.bind_tools(tools)


# Subgraph


def call_model(state: MessagesState):
    return {"messages": [llm_with_tools.invoke([SystemMessage(SYSTEM_PROMPT)] + state["messages"])]}


subgraph_builder = StateGraph(MessagesState)
subgraph_builder.add_node(call_model)
subgraph_builder.add_node("tools", ToolNode(tools))
subgraph_builder.add_edge(START, "call_model")
subgraph_builder.add_conditional_edges("call_model", tools_condition)
subgraph_builder.add_edge("tools", "call_model")
subgraph = subgraph_builder.compile()


# Parent graph


class State(MessagesState):
    question: str


def prepare(state: State):
    last = state["messages"][-1]
    question = str(last.content).strip()
    # same id: add_messages replaces the message instead of appending a second one
    return {"messages": [HumanMessage(content=question, id=last.id)], "question": question}


builder = StateGraph(State)
builder.add_node("prepare", prepare)
builder.add_node("weather_agent", subgraph)
builder.add_edge(START, "prepare")
builder.add_edge("prepare", "weather_agent")
graph = builder.compile()
