"""Weather agent whose tools call a weather web API (requests and httpx, sync).

Sources imitated: the graph is the current LangGraph quickstart's Graph API agent
(langchain-ai/docs: src/oss/langgraph/quickstart.mdx, "Use the Graph API"), with the
``MessagesState`` of langgraph.graph and a module-level ``ChatOpenAI`` as in
langchain-ai/langgraph: docs/docs/how-tos/react-agent-from-scratch.ipynb (commit
23961cff61a42b52525f3b20b4094d8d2fba1744). The tools follow the "the placeholder is where
you call your API" comment of those examples: each tool does a blocking HTTP GET with the
library the team happened to reach for (``requests`` for weather, ``httpx`` for time).

Habits kept: ``@tool`` functions that read ``os.environ['WEATHER_API_URL']`` AT CALL TIME
(a KeyError inside the tool if unset), ``raise_for_status()`` then one JSON field;
module-level ``llm = ChatOpenAI(model="gpt-4o-mini")`` and ``llm_with_tools``; sync
``llm_call`` node with ``SystemMessage(SYSTEM_PROMPT)`` prepended; a hand-written sync
``tool_node`` over ``tools_by_name``; ``should_continue`` routing to "tool_node" or END;
module-level ``graph``. Blocking HTTP inside sync nodes: under ``ainvoke`` LangGraph runs
them in a thread pool.

Input: ``{"messages": [HumanMessage(...)]}``. Answer: last AI message of ``messages``.
"""

import os
from typing import Literal

import httpx
import requests
from langchain_core.messages import SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."


@tool
def get_weather(city: str) -> str:
    """Get the current weather forecast for a city."""
    response = requests.get(f"{os.environ['WEATHER_API_URL']}/weather", params={"city": city})
    response.raise_for_status()
    return response.json()["forecast"]


@tool
def get_time(city: str) -> str:
    """Get the local time in a city."""
    response = httpx.get(f"{os.environ['WEATHER_API_URL']}/time", params={"city": city})
    response.raise_for_status()
    return response.json()["time"]


tools = [get_weather, get_time]
tools_by_name = {tool.name: tool for tool in tools}

llm = ChatOpenAI(model="gpt-4o-mini")
llm_with_tools = llm.bind_tools(tools)


def llm_call(state: MessagesState):
    """LLM decides whether to call a tool or not"""
    return {
        "messages": [
            llm_with_tools.invoke([SystemMessage(content=SYSTEM_PROMPT)] + state["messages"])
        ]
    }


def tool_node(state: MessagesState):
    """Performs the tool call"""
    result = []
    for tool_call in state["messages"][-1].tool_calls:
        tool = tools_by_name[tool_call["name"]]
        observation = tool.invoke(tool_call["args"])
        result.append(ToolMessage(content=observation, tool_call_id=tool_call["id"]))
    return {"messages": result}


def should_continue(state: MessagesState) -> Literal["tool_node", END]:
    """Decide if we should continue the loop or stop based upon whether the LLM made a tool
    call"""
    last_message = state["messages"][-1]
    if last_message.tool_calls:
        return "tool_node"
    return END


builder = StateGraph(MessagesState)
builder.add_node("llm_call", llm_call)
builder.add_node("tool_node", tool_node)
builder.add_edge(START, "llm_call")
builder.add_conditional_edges("llm_call", should_continue, ["tool_node", END])
builder.add_edge("tool_node", "llm_call")
graph = builder.compile()
