"""Deterministic drive-thru evaluators (seed 000), in the Langfuse evaluator convention.

They read the generic output contract of a LangGraph agent (see agents/adapters/graph.py):
``current_order`` (picked from the graph's final state: ``{items: [{item_id, name,
quantity, size, modifiers: [{modifier_id, name}]}], finalized}``) and ``tools_called``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from eval_pipeline.plugins import Score, evaluator, register, run_evaluator

# Weights of one matched order line (they sum to 1).
W_ITEM, W_QUANTITY, W_MODIFIERS, W_SIZE = 0.4, 0.3, 0.2, 0.1
DEFAULT_SIZE = "regular"


def order_lines(output: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The order lines of an output: ``current_order.items``."""
    order = (output or {}).get("current_order") or {}
    return list(order.get("items") or []) if isinstance(order, dict) else []


def tools_called(output: Mapping[str, Any] | None) -> list[str]:
    return list((output or {}).get("tools_called") or [])


def _merge_lines(lines: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Lines with the same item_id become one: quantities summed, modifier sets united."""
    merged: dict[str, dict[str, Any]] = {}
    for line in lines:
        item_id = line["item_id"]
        entry = merged.setdefault(
            item_id,
            {"name": line.get("name", item_id), "quantity": 0, "modifiers": set(), "size": None},
        )
        entry["quantity"] += int(line.get("quantity", 1))
        entry["modifiers"] |= {m["modifier_id"] for m in line.get("modifiers") or []}
        if entry["size"] is None:
            entry["size"] = line.get("size") or DEFAULT_SIZE
    return merged


def _names(lines: Iterable[Mapping[str, Any]]) -> list[str]:
    return [line.get("name", line["item_id"]) for line in lines]


def _line_score(exp: dict[str, Any], act: dict[str, Any]) -> tuple[float, list[str]]:
    notes: list[str] = []
    q_exp, q_act = exp["quantity"], act["quantity"]
    q_ratio = min(q_exp, q_act) / max(q_exp, q_act) if max(q_exp, q_act) else 1.0
    if q_exp != q_act:
        notes.append(f"quantity {q_act} (expected {q_exp})")
    union = exp["modifiers"] | act["modifiers"]
    jaccard = len(exp["modifiers"] & act["modifiers"]) / len(union) if union else 1.0
    if missing := sorted(exp["modifiers"] - act["modifiers"]):
        notes.append(f"missing modifiers {missing}")
    if extra := sorted(act["modifiers"] - exp["modifiers"]):
        notes.append(f"extra modifiers {extra}")
    size_ok = exp["size"] == act["size"]
    if not size_ok:
        notes.append(f"size {act['size']} (expected {exp['size']})")
    score = W_ITEM + W_QUANTITY * q_ratio + W_MODIFIERS * jaccard + W_SIZE * size_ok
    return score, notes


@register
@evaluator(reads=("expected_output.expected_items",))
def order_correctness(*, output, expected_output=None, **kwargs) -> Score:
    """Weighted partial credit per item_id, divided by the distinct ids on either side."""
    expected_items = (expected_output or {}).get("expected_items", [])
    actual_items = order_lines(output)
    if not expected_items and not actual_items:
        return Score(1.0, "Correctly added no items")
    if not expected_items:
        return Score(0.0, f"Expected no items but got: {_names(actual_items)}")
    if not actual_items:
        return Score(0.0, f"Expected {_names(expected_items)} but the order is empty")
    expected, actual = _merge_lines(expected_items), _merge_lines(actual_items)
    total, problems = 0.0, []
    for item_id in expected.keys() | actual.keys():
        exp, act = expected.get(item_id), actual.get(item_id)
        if exp is None:
            problems.append(f"extra item {act['name']} [{item_id}]")
        elif act is None:
            problems.append(f"missing item {exp['name']} [{item_id}]")
        else:
            score, notes = _line_score(exp, act)
            total += score
            problems.extend(f"{exp['name']}: {note}" for note in notes)
    value = total / len(expected.keys() | actual.keys())
    return Score(round(value, 6), "; ".join(sorted(problems)) or "Order matches exactly")


@register
@evaluator(reads=("expected_output.expected_items",))
def tool_call_accuracy(*, output, expected_output=None, **kwargs) -> Score:
    """Was the protocol followed: lookup_menu_item before add_item_to_order?"""
    calls = tools_called(output)
    expects_items = bool((expected_output or {}).get("expected_items"))
    lookup = calls.index("lookup_menu_item") if "lookup_menu_item" in calls else None
    add = calls.index("add_item_to_order") if "add_item_to_order" in calls else None
    if not expects_items:
        if add is None:
            return Score(1.0, "No items expected and none added")
        return Score(0.0, "No items expected but add_item_to_order was called")
    if lookup is not None and add is not None:
        if lookup < add:
            return Score(1.0, "Correct: lookup before add")
        return Score(0.5, "Wrong order: add before the first lookup")
    if lookup is not None:
        return Score(0.3, "Looked up but never added an item")
    if add is not None:
        return Score(0.3, "Added without looking the item up")
    return Score(0.0, "Neither lookup nor add was called")


@register
def no_hallucinated_items(valid_item_ids: Iterable[str]):
    """An evaluator: 1.0 if every ordered item_id is one of ``valid_item_ids`` (empty order:
    1.0). Needs no reference, so it also scores production traces."""
    valid = frozenset(valid_item_ids)

    @evaluator(
        name="no_hallucinated_items", params={"valid_item_ids": sorted(valid)}, data_type="BOOLEAN"
    )
    def check(*, output, **kwargs) -> Score:
        invented = sorted({line["item_id"] for line in order_lines(output)} - valid)
        if invented:
            return Score(0.0, f"Not on the menu: {invented}")
        return Score(1.0, "All items on the menu")

    return check


@register
@run_evaluator
def avg_order_correctness(*, item_results, **kwargs) -> Score:
    """Run level: mean of the items' order_correctness values that are not None."""
    values = [
        ev.value
        for result in item_results
        for ev in result.evaluations
        if ev.name == "order_correctness" and ev.value is not None
    ]
    if not values:
        return Score(0.0, "No order_correctness values")
    avg = sum(values) / len(values)
    return Score(round(avg, 3), f"Average order correctness: {avg:.1%} across {len(values)} items")


def blind_add_at(names: Iterable[str]) -> int | None:
    """The index of the first add_item_to_order before any lookup_menu_item, or None."""
    looked_up = False
    for i, name in enumerate(names):
        if name == "lookup_menu_item":
            looked_up = True
        elif name == "add_item_to_order" and not looked_up:
            return i
    return None


@register
@evaluator(data_type="BOOLEAN")
def tool_protocol(*, output, **kwargs) -> Score:
    """1.0 if every add_item_to_order came after a lookup_menu_item (no adds: 1.0). Needs
    no reference, so it also scores production traces."""
    blind = blind_add_at(tools_called(output))
    if blind is not None:
        return Score(0.0, f"add_item_to_order (call {blind + 1}) before any lookup")
    return Score(1.0, "lookups before adds")
