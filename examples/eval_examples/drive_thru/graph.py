"""The drive-thru agent: a LangGraph state machine (seed 000), single- and multi-turn.

orchestrator (LLM) → tools → update_order → orchestrator … → END

``build(ctx)`` is the factory the project file names: the run's model, the prompt under
test with the menu filled in. The order lives in the graph state (``current_order``),
which the suite picks into the output contract (``state_fields``).
"""

from __future__ import annotations

import json
import operator
from typing import Annotated, Literal

from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode

from eval_examples.drive_thru.menu import Order, OrderItem, load_menu
from eval_examples.drive_thru.tools import TOOLS
from eval_pipeline import AgentContext


class DriveThruState(MessagesState):
    current_order: Order
    reasoning: Annotated[list[str], operator.add]


def build(ctx: AgentContext) -> CompiledStateGraph:
    """The graph for one item: the prompt under test with the menu, on the run's model."""
    system_prompt = ctx.system_prompt(menu=load_menu().describe())
    return build_graph(ctx.model.bind_tools(TOOLS), system_prompt)


def build_graph(llm: Runnable, system_prompt: str) -> CompiledStateGraph:
    async def orchestrator(state: DriveThruState) -> dict:
        messages = [SystemMessage(content=system_prompt), *state["messages"]]
        reply = await llm.ainvoke(messages)
        calls = [c["name"] for c in getattr(reply, "tool_calls", None) or []]
        note = f"calling {', '.join(calls)}" if calls else "answering the customer"
        return {"messages": [reply], "reasoning": [note]}

    async def update_order(state: DriveThruState) -> dict:  # async: no thread hop
        order = (state.get("current_order") or Order()).model_copy(deep=True)
        notes = []
        removed: list[int] = []
        for message in _last_tool_results(state["messages"]):
            try:
                result = json.loads(str(message.content))
            except json.JSONDecodeError:
                continue
            if result.get("status") == "added":
                order.items.append(OrderItem.model_validate(result["line"]))
                notes.append(f"added {result.get('summary')}")
            elif result.get("status") == "changed":
                order.items[result["line_no"] - 1] = OrderItem.model_validate(result["line"])
                notes.append(f"changed line {result['line_no']} to {result.get('summary')}")
            elif result.get("status") == "removed":
                removed.append(result["line_no"])
                notes.append(f"removed {result.get('summary')}")
            elif result.get("status") == "finalized":
                order.finalized = True
                notes.append("order finalized")
            elif result.get("status") == "error":
                notes.append(f"tool error: {result.get('message')}")
        # Line numbers refer to the order before this step: remove after the changes.
        order.items = [i for n, i in enumerate(order.items, 1) if n not in set(removed)]
        return {"current_order": order, "reasoning": notes}

    builder = StateGraph(DriveThruState)
    builder.add_node("orchestrator", orchestrator)
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
    order = state.get("current_order")
    return "end" if order is not None and order.finalized else "continue"


def _last_tool_results(messages: list) -> list[ToolMessage]:
    results: list[ToolMessage] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.append(message)
    return list(reversed(results))
