"""The order_management suite (seed 001): a support assistant over the catalog's orders."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from eval_pipeline.agents.order_management.orders import load_orders, order_tools
from eval_pipeline.agents.product_discovery.catalog import load_catalog
from eval_pipeline.agents.tool_agent import ToolAgent, validate_behavioural_case
from eval_pipeline.core.prompts import PromptVersion
from eval_pipeline.core.suite import Suite
from eval_pipeline.evaluators import correctness, groundedness
from eval_pipeline.evaluators.behavioural import FIELD_ALIASES, completeness_with, overall_with
from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.settings import LLMSettings

CATEGORIES = ("status", "tracking", "listing", "returns", "chit_chat")
TOOL_NAMES = ("get_order_status", "track_shipment", "list_orders", "request_return")
ALIASES = {
    **FIELD_ALIASES,
    "eta": ("expected delivery", "arrive", "eta"),
    "carrier": ("UPS", "FedEx", "DHL", "USPS", "carrier"),
    "return_label": ("return label", "label"),
    "orders": ("orders", "order"),
}


def make_agent(prompt: PromptVersion, settings: LLMSettings, datasets_dir: Path) -> ToolAgent:
    catalog = load_catalog(datasets_dir / "product_discovery" / "catalog.csv")
    orders = load_orders(datasets_dir / "order_management" / "orders.csv")
    names = {p.product_id: p.name for p in catalog.products}
    return ToolAgent(
        create_chat_model(settings),
        order_tools(orders, names),
        prompt,
        model_name=settings.model,
        base_seed=settings.seed,
    )


def build_suite(datasets_dir: Path) -> Suite:
    return Suite(
        name="order_management",
        dataset_dir=datasets_dir / "order_management",
        prompt_name="order-management/assistant",
        categories=CATEGORIES,
        absence_categories=(),
        make_agent=partial(make_agent, datasets_dir=datasets_dir),
        evaluators=(groundedness, correctness, completeness_with(ALIASES), overall_with(ALIASES)),
        validate_case=validate_behavioural_case(TOOL_NAMES),
    )
