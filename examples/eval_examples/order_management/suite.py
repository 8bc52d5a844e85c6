"""The order_management suite (seed 001): a support assistant over the shop's orders."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from eval_examples.order_management.orders import load_orders, order_tools
from eval_examples.tool_agent import build_tool_graph, validate_behavioural_case
from eval_pipeline import AgentContext

TOOL_NAMES = ("get_order_status", "track_shipment", "list_orders", "request_return")
validate_case = validate_behavioural_case(TOOL_NAMES)


def build(ctx: AgentContext) -> CompiledStateGraph:
    """Agent ⇄ order tools, over the orders beside the suite's cases."""
    tools = tools_over(ctx.dataset_dir / "orders.csv")
    return build_tool_graph(ctx.model.bind_tools(tools), tools, ctx.system_prompt())


@cache
def tools_over(path: Path) -> tuple[BaseTool, ...]:
    """The tools over the orders at ``path``, made once: they only read it, so every item
    shares them (``build`` runs for each item; making them is most of its time)."""
    return tuple(order_tools(load_orders(path)))
