"""The product_discovery suite (seed 001): a shopping assistant over the catalog."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from eval_pipeline.agents.product_discovery.catalog import catalog_tools, load_catalog
from eval_pipeline.agents.tool_agent import ToolAgent, validate_behavioural_case
from eval_pipeline.core.prompts import PromptVersion
from eval_pipeline.core.suite import Suite
from eval_pipeline.evaluators import correctness, groundedness
from eval_pipeline.evaluators.behavioural import FIELD_ALIASES, completeness_with, overall_with
from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.settings import LLMSettings

CATEGORIES = ("search", "filtered", "reviews", "inventory", "details", "chit_chat")
TOOL_NAMES = ("search_products", "get_product_details", "get_reviews", "check_inventory")
ALIASES = {
    **FIELD_ALIASES,
    "name": ("name", "recommend", "called"),  # the answer names a product
    "stock": ("in stock", "out of stock", "available", "units"),
    "reviews": ("review", "reviews", "customers say"),
    "brand": ("brand", "made by"),
}


def make_agent(prompt: PromptVersion, settings: LLMSettings, catalog_path: Path) -> ToolAgent:
    return ToolAgent(
        create_chat_model(settings),
        catalog_tools(load_catalog(catalog_path)),
        prompt,
        model_name=settings.model,
        base_seed=settings.seed,
    )


def build_suite(datasets_dir: Path) -> Suite:
    return Suite(
        name="product_discovery",
        dataset_dir=datasets_dir / "product_discovery",
        prompt_name="product-discovery/assistant",
        categories=CATEGORIES,
        absence_categories=(),
        make_agent=partial(
            make_agent, catalog_path=datasets_dir / "product_discovery" / "catalog.csv"
        ),
        evaluators=(groundedness, correctness, completeness_with(ALIASES), overall_with(ALIASES)),
        validate_case=validate_behavioural_case(TOOL_NAMES),
    )
