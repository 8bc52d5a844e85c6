"""The drive_thru suite (seed 000): dataset rules, evaluators and the agent factory."""

from __future__ import annotations

from pathlib import Path

from eval_pipeline.agents.drive_thru.agent import DriveThruAgent
from eval_pipeline.agents.drive_thru.menu import load_menu
from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.prompts import PromptVersion
from eval_pipeline.core.suite import Suite
from eval_pipeline.evaluators import (
    avg_order_correctness,
    cost_within,
    latency_within,
    no_error,
    no_hallucinated_items,
    order_correctness,
    tool_call_accuracy,
    tool_protocol,
)
from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.settings import LLMSettings

CATEGORIES = (
    "simple", "quantity", "multi_item", "modifiers", "not_on_menu", "greeting",
    "informal", "ambiguous", "complex_combo",
)  # fmt: skip
ABSENCE_CATEGORIES = ("not_on_menu", "greeting", "ambiguous")
TRACE_NAME = "drive-thru-agent"  # root observation of the production agent's traces
LATENCY_BUDGET_MS = 5_000  # a customer at the speaker waits no longer
COST_BUDGET_USD = 0.01


def validate_case(case: GoldenCase) -> list[tuple[str, str]]:
    """Every expected line must name a menu item, a valid quantity, size and modifiers."""
    menu = load_menu()
    problems: list[tuple[str, str]] = []
    if not isinstance(case.input.get("customer_utterance"), str):
        problems.append(("input.customer_utterance", "required, a string"))
    items = (case.expected_output or {}).get("expected_items")
    if not isinstance(items, list):
        return [*problems, ("expected_output.expected_items", "required, a list (may be empty)")]
    for i, line in enumerate(items):
        where = f"expected_output.expected_items.{i}"
        if not isinstance(line, dict):
            problems.append((where, "each expected item is a mapping"))
            continue
        item = menu.item(str(line.get("item_id")))
        if item is None:
            problems.append((f"{where}.item_id", f"{line.get('item_id')!r} is not on the menu"))
            continue
        quantity = line.get("quantity")
        if not isinstance(quantity, int) or isinstance(quantity, bool) or quantity < 1:
            problems.append((f"{where}.quantity", f"a whole number ≥ 1, got {quantity!r}"))
        size = line.get("size")
        sizes = {s.value for s in item.sizes}
        if size is not None and size not in sizes and not (size == "regular" and not sizes):
            problems.append((f"{where}.size", f"{item.name} has no size {size!r}"))
        for j, mod in enumerate(line.get("modifiers") or []):
            mod_id = mod.get("modifier_id") if isinstance(mod, dict) else None
            if mod_id not in item.modifiers:
                problems.append(
                    (f"{where}.modifiers.{j}", f"{mod_id!r} is not a modifier of {item.name}")
                )
    if case.category in ABSENCE_CATEGORIES and items:
        problems.append(("expected_output.expected_items", f"{case.category} cases expect []"))
    return problems


def make_agent(prompt: PromptVersion, settings: LLMSettings) -> DriveThruAgent:
    return DriveThruAgent(
        create_chat_model(settings), prompt, model_name=settings.model, base_seed=settings.seed
    )


def build_suite(datasets_dir: Path) -> Suite:
    return Suite(
        name="drive_thru",
        dataset_dir=datasets_dir / "drive_thru",
        prompt_name="drive-thru/orchestrator",
        categories=CATEGORIES,
        absence_categories=ABSENCE_CATEGORIES,
        make_agent=make_agent,
        evaluators=(
            order_correctness,
            tool_call_accuracy,
            no_hallucinated_items(load_menu().item_ids),
        ),
        run_evaluators=(avg_order_correctness,),
        validate_case=validate_case,
        trace_name=TRACE_NAME,
        trace_evaluators=(
            no_hallucinated_items(load_menu().item_ids),
            tool_protocol,
            no_error,
            latency_within(LATENCY_BUDGET_MS),
            cost_within(COST_BUDGET_USD),
        ),
    )
