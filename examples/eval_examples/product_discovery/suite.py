"""The product_discovery suite (seed 001): a shopping assistant over the catalog."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from eval_examples.product_discovery.catalog import catalog_tools, load_catalog
from eval_examples.tool_agent import build_tool_graph, validate_behavioural_case
from eval_pipeline import AgentContext

TOOL_NAMES = ("search_products", "get_product_details", "get_reviews", "check_inventory")
validate_case = validate_behavioural_case(TOOL_NAMES)


def build(ctx: AgentContext) -> CompiledStateGraph:
    """Agent ⇄ catalog tools, over the catalog beside the suite's cases."""
    tools = tools_over(ctx.dataset_dir / "catalog.csv")
    return build_tool_graph(ctx.model.bind_tools(tools), tools, ctx.system_prompt())


@cache
def tools_over(path: Path) -> tuple[BaseTool, ...]:
    """The tools over the catalog at ``path``, made once: they only read it, so every item
    shares them (``build`` runs for each item; making them is most of its time)."""
    return tuple(catalog_tools(load_catalog(path)))
