"""The product_discovery suite (seed 001): a shopping assistant over the catalog."""

from __future__ import annotations

from langgraph.graph.state import CompiledStateGraph

from eval_examples.product_discovery.catalog import catalog_tools, load_catalog
from eval_examples.tool_agent import build_tool_graph, validate_behavioural_case
from eval_pipeline import AgentContext

TOOL_NAMES = ("search_products", "get_product_details", "get_reviews", "check_inventory")
validate_case = validate_behavioural_case(TOOL_NAMES)


def build(ctx: AgentContext) -> CompiledStateGraph:
    """Agent ⇄ catalog tools, over the catalog beside the suite's cases."""
    tools = catalog_tools(load_catalog(ctx.dataset_dir / "catalog.csv"))
    return build_tool_graph(ctx.model.bind_tools(tools), tools, ctx.system_prompt())
