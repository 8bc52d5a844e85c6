"""What the project file names for the drive_thru suite (seed 000) besides its graph:
the case validator and the on-menu check (the menu's item ids bound in)."""

from __future__ import annotations

from eval_examples.drive_thru.evaluators import no_hallucinated_items as no_hallucinated_items_in
from eval_examples.drive_thru.menu import load_menu
from eval_pipeline import GoldenCase

ABSENCE_CATEGORIES = ("not_on_menu", "greeting", "ambiguous")
TRACE_NAME = "drive-thru-agent"  # root observation of the production agent's traces

# 1.0 if every ordered item is on the shipped menu: `- eval_examples.drive_thru.suite:
# no_hallucinated_items` in the project file (it needs no reference: traces use it too).
no_hallucinated_items = no_hallucinated_items_in(load_menu().item_ids)


def validate_case(case: GoldenCase) -> list[tuple[str, str]]:
    """Every expected line must name a menu item, a valid quantity, size and modifiers."""
    menu = load_menu()
    problems: list[tuple[str, str]] = []
    if not isinstance(case.input, dict) or not isinstance(
        case.input.get("customer_utterance"), str
    ):
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
