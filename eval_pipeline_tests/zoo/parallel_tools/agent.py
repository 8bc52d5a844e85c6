"""A ReAct loop whose model asks for several tools in one message, run in parallel.

Source imitated: langchain-ai/langgraph, the how-to "How to call tools using ToolNode"
(docs/docs/how-tos/tool-calling.ipynb): ``@tool`` functions ``get_weather(location)`` and
``get_coolest_cities()``, ``tool_node = ToolNode(tools)`` (which runs the calls of one
message in parallel), ``model_with_tools = ChatOpenAI(…).bind_tools(tools)``, a
``should_continue`` on the last message's ``tool_calls``, ``call_model`` and a
``StateGraph(MessagesState)`` with ``agent`` and ``tools`` nodes.

Habits kept: module-level model and graph, the system prompt as a module constant added
in ``call_model``.

Input: a case's ``message``. Answer: the last AI message.
"""

from typing import Literal

from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

SYSTEM_PROMPT = "You are a weather assistant. Look up every city asked about with the tools."

WEATHER = {"sf": "60 degrees and foggy", "nyc": "90 degrees and sunny",
           "oslo": "20 degrees and snowing", "lima": "70 degrees and cloudy"}  # fmt: skip


@tool
def get_weather(location: str):
    """Call to get the current weather."""
    return f"It's {WEATHER.get(location.lower(), 'unknown')} in {location}."


@tool
def get_coolest_cities():
    """Get a list of coolest cities"""
    return "nyc, sf"


tools = [get_weather, get_coolest_cities]
tool_node = ToolNode(tools)
model_with_tools = ChatOpenAI(model="gpt-4o-mini", temperature=0).bind_tools(tools)


def should_continue(state: MessagesState) -> Literal["tools", "__end__"]:
    messages = state["messages"]
    last_message = messages[-1]
    if last_message.tool_calls:
        return "tools"
    return END


def call_model(state: MessagesState):
    messages = [SystemMessage(SYSTEM_PROMPT), *state["messages"]]
    response = model_with_tools.invoke(messages)
    return {"messages": [response]}


workflow = StateGraph(MessagesState)
workflow.add_node("agent", call_model)
workflow.add_node("tools", tool_node)
workflow.add_edge(START, "agent")
workflow.add_conditional_edges("agent", should_continue, ["tools", END])
workflow.add_edge("tools", "agent")
app = workflow.compile()
