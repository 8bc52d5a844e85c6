"""Deterministic drive-thru evaluators (seed 000), in the Langfuse evaluator convention.

Item evaluators: ``fn(*, input=None, output, expected_output=None, metadata=None, **kwargs)``.
Run evaluators: ``fn(*, item_results, **kwargs)``. Both return ``langfuse.Evaluation``,
so they work in our runner and inside ``langfuse.run_experiment`` alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langfuse import Evaluation

# Weights of one matched order line (they sum to 1).
W_ITEM, W_QUANTITY, W_MODIFIERS, W_SIZE = 0.4, 0.3, 0.2, 0.1
DEFAULT_SIZE = "regular"


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


def order_correctness(
    *, input=None, output, expected_output=None, metadata=None, **kwargs
) -> Evaluation:
    """Weighted partial credit per item_id, divided by the distinct ids on either side."""
    expected_items = (expected_output or {}).get("expected_items", [])
    actual_items = (output or {}).get("order_items", [])
    name = "order_correctness"
    if not expected_items and not actual_items:
        return Evaluation(name=name, value=1.0, comment="Correctly added no items")
    if not expected_items:
        return Evaluation(
            name=name, value=0.0, comment=f"Expected no items but got: {_names(actual_items)}"
        )
    if not actual_items:
        return Evaluation(
            name=name,
            value=0.0,
            comment=f"Expected {_names(expected_items)} but the order is empty",
        )
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
    comment = "; ".join(sorted(problems)) if problems else "Order matches exactly"
    return Evaluation(name=name, value=round(value, 6), comment=comment)


def tool_call_accuracy(
    *, input=None, output, expected_output=None, metadata=None, **kwargs
) -> Evaluation:
    """Was the protocol followed: lookup_menu_item before add_item_to_order?"""
    name = "tool_call_accuracy"
    calls = list((output or {}).get("tool_calls", []))
    expects_items = bool((expected_output or {}).get("expected_items"))
    lookup = calls.index("lookup_menu_item") if "lookup_menu_item" in calls else None
    add = calls.index("add_item_to_order") if "add_item_to_order" in calls else None
    if not expects_items:
        if add is None:
            return Evaluation(name=name, value=1.0, comment="No items expected and none added")
        return Evaluation(
            name=name, value=0.0, comment="No items expected but add_item_to_order was called"
        )
    if lookup is not None and add is not None:
        if lookup < add:
            return Evaluation(name=name, value=1.0, comment="Correct: lookup before add")
        return Evaluation(name=name, value=0.5, comment="Wrong order: add before the first lookup")
    if lookup is not None:
        return Evaluation(name=name, value=0.3, comment="Looked up but never added an item")
    if add is not None:
        return Evaluation(name=name, value=0.3, comment="Added without looking the item up")
    return Evaluation(name=name, value=0.0, comment="Neither lookup nor add was called")


def no_hallucinated_items(valid_item_ids: Iterable[str]) -> Callable[..., Evaluation]:
    """Build an evaluator: 1.0 if every ordered item_id is on the menu (empty order = 1.0)."""
    valid = frozenset(valid_item_ids)

    def no_hallucinated_items(
        *, input=None, output, expected_output=None, metadata=None, **kwargs
    ) -> Evaluation:
        ids = [line["item_id"] for line in (output or {}).get("order_items", [])]
        invented = sorted({i for i in ids if i not in valid})
        if invented:
            return Evaluation(
                name="no_hallucinated_items", value=0.0, comment=f"Not on the menu: {invented}"
            )
        return Evaluation(name="no_hallucinated_items", value=1.0, comment="All items on the menu")

    return no_hallucinated_items


def avg_order_correctness(*, item_results, **kwargs) -> Evaluation:
    """Run level: mean of the items' order_correctness values that are not None."""
    values = [
        ev.value
        for result in item_results
        for ev in result.evaluations
        if ev.name == "order_correctness" and ev.value is not None
    ]
    if not values:
        return Evaluation(
            name="avg_order_correctness", value=0.0, comment="No order_correctness values"
        )
    avg = sum(values) / len(values)
    return Evaluation(
        name="avg_order_correctness",
        value=round(avg, 3),
        comment=f"Average order correctness: {avg:.1%} across {len(values)} items",
    )
