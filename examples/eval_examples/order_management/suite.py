"""The order_management suite (seed 001): a support assistant over the shop's orders."""

from __future__ import annotations

from langgraph.graph.state import CompiledStateGraph

from eval_examples.order_management.orders import load_orders, order_tools
from eval_examples.tool_agent import build_tool_graph, validate_behavioural_case
from eval_pipeline import AgentContext

TOOL_NAMES = ("get_order_status", "track_shipment", "list_orders", "request_return")
validate_case = validate_behavioural_case(TOOL_NAMES)


def build(ctx: AgentContext) -> CompiledStateGraph:
    """Agent ⇄ order tools, over the orders beside the suite's cases."""
    tools = order_tools(load_orders(ctx.dataset_dir / "orders.csv"))
    return build_tool_graph(ctx.model.bind_tools(tools), tools, ctx.system_prompt())
