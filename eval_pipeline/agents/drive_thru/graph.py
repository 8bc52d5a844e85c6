"""The drive-thru agent: a 4-node LangGraph state machine (seed 000).

orchestrator (LLM, retried) → tools → update_order → orchestrator … → END
"""

from __future__ import annotations

import json
import operator
from typing import Annotated, Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode

from eval_pipeline.agents.drive_thru.menu import Menu, Order, OrderItem
from eval_pipeline.agents.drive_thru.tools import TOOLS
from eval_pipeline.agents.retry_policy import LLM_RETRY_POLICY
from eval_pipeline.agents.seeding import call_options


class DriveThruState(MessagesState):
    menu: Menu
    current_order: Order
    reasoning: Annotated[list[str], operator.add]


def build_graph(llm: Runnable, system_prompt: str) -> CompiledStateGraph:
    """Compile the graph once per agent; each item's seed comes with its run config."""

    async def orchestrator(state: DriveThruState, config: RunnableConfig) -> dict:
        messages = [SystemMessage(content=system_prompt), *state["messages"]]
        reply = await llm.ainvoke(messages, **call_options(config))
        calls = [c["name"] for c in getattr(reply, "tool_calls", None) or []]
        note = f"calling {', '.join(calls)}" if calls else "answering the customer"
        return {"messages": [reply], "reasoning": [note]}

    async def update_order(state: DriveThruState) -> dict:  # async: no thread hop
        order = state["current_order"].model_copy(deep=True)
        notes = []
        for message in _last_tool_results(state["messages"]):
            try:
                result = json.loads(str(message.content))
            except json.JSONDecodeError:
                continue
            if result.get("status") == "added":
                order.items.append(OrderItem.model_validate(result["line"]))
                notes.append(f"added {result.get('summary')}")
            elif result.get("status") == "finalized":
                order.finalized = True
                notes.append("order finalized")
            elif result.get("status") == "error":
                notes.append(f"tool error: {result.get('message')}")
        return {"current_order": order, "reasoning": notes}

    builder = StateGraph(DriveThruState)
    builder.add_node("orchestrator", orchestrator, retry_policy=LLM_RETRY_POLICY)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_node("update_order", update_order)
    builder.add_edge(START, "orchestrator")
    builder.add_conditional_edges(
        "orchestrator", should_continue, {"tools": "tools", "respond": END}
    )
    builder.add_edge("tools", "update_order")
    builder.add_conditional_edges(
        "update_order", should_end_after_update, {"end": END, "continue": "orchestrator"}
    )
    return builder.compile()


def should_continue(state: DriveThruState) -> Literal["tools", "respond"]:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else "respond"


def should_end_after_update(state: DriveThruState) -> Literal["end", "continue"]:
    return "end" if state["current_order"].finalized else "continue"


def _last_tool_results(messages: list) -> list[ToolMessage]:
    results: list[ToolMessage] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.append(message)
    return list(reversed(results))


def bind_llm(llm: BaseChatModel) -> Runnable:
    return llm.bind_tools(TOOLS)
