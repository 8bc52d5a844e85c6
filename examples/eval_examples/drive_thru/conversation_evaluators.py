"""Evaluators of conversations (core/suites/conversation.py), for order-taking agents.

They read the conversation fields of the output contract: ``transcript`` (per turn: the
customer's words, the agent's reply, its tool calls, the state fields after the turn),
``turns`` and ``stop_reason``; the final order is ``current_order`` as in single-turn cases
(so ``order_correctness`` scores the final order with seed 000's weights).

Expected output of a conversation case: ``expected_items`` (the final order), optionally
``max_turns_needed`` (turns a good agent needs; default: scripted turns + 1 to say "that's
all"), ``allowed_items`` (item ids the customer asks for on the way and later removes) and
``correction`` (``{turn, item_id, quantity}``: after that customer turn the order holds that
quantity of the item, 0 for removed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eval_examples.drive_thru.evaluators import blind_add_at, order_correctness
from eval_pipeline.plugins import Score, evaluator, register

FINALIZED = "agent_finalized"


def _transcript(output: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return list((output or {}).get("transcript") or [])


def _items_at(turn: Mapping[str, Any]) -> list[dict[str, Any]]:
    order = (turn.get("state") or {}).get("current_order") or {}
    return list(order.get("items") or []) if isinstance(order, dict) else []


@register
@evaluator(data_type="BOOLEAN", reads=("expected_output.expected_items",))
def goal_completed(*, output, expected_output=None, **kwargs) -> Score:
    """1.0 when the agent finished the order and it is exactly the customer's goal."""
    stop = (output or {}).get("stop_reason")
    if stop != FINALIZED:
        return Score(0.0, f"not finished: {stop or 'no conversation'}")
    final = order_correctness(output=output, expected_output=expected_output)
    if final.value != 1.0:
        return Score(0.0, f"finished with a different order: {final.comment}")
    return Score(1.0, f"finished with the goal's order in {(output or {}).get('turns')} turns")


@register
@evaluator(may_read=("expected_output.max_turns_needed",))
def turn_efficiency(*, output, input=None, expected_output=None, **kwargs) -> Score:
    """Turns a good agent needs ÷ turns taken (1.0 at or under); 0.0 when the conversation
    hit the turn limit or failed (finished: the agent finished, or the customer was done)."""
    turns = int((output or {}).get("turns") or 0)
    if (output or {}).get("stop_reason") not in (FINALIZED, "customer_done") or not turns:
        return Score(0.0, f"not finished after {turns} turns")
    needed = (expected_output or {}).get("max_turns_needed")
    if needed is None:
        scripted = ((input or {}).get("conversation") or {}).get("turns") or []
        needed = len(scripted) + 1
    return Score(round(min(1.0, needed / turns), 6), f"{turns} turns (a good agent: {needed})")


@register
@evaluator
def tool_protocol_every_turn(*, output, **kwargs) -> Score:
    """Share of turns where every add_item_to_order came after a lookup_menu_item in the
    same turn (turns without adds count as following it)."""
    turns = _transcript(output)
    if not turns:
        return Score(0.0, "no turns")
    broken = [
        turn.get("turn")
        for turn in turns
        if blind_add_at(c.get("name") for c in turn.get("tool_calls") or []) is not None
    ]
    value = 1 - len(broken) / len(turns)
    return Score(round(value, 6), f"adds without a lookup at turns {broken}" if broken else
                 "lookups before adds on every turn")  # fmt: skip


@register
@evaluator(reads=("expected_output.expected_items",),
           may_read=("expected_output.allowed_items",))  # fmt: skip
def no_hallucinated_items_any_turn(*, output, expected_output=None, **kwargs) -> Score:
    """1.0 when, after every turn, the order holds only items the customer asked for (the
    goal's and ``allowed_items``)."""
    expected = expected_output or {}
    allowed = {line["item_id"] for line in expected.get("expected_items") or []}
    allowed |= set(expected.get("allowed_items") or [])
    for turn in _transcript(output):
        extra = sorted({i["item_id"] for i in _items_at(turn)} - allowed)
        if extra:
            return Score(0.0, f"turn {turn.get('turn')}: never asked for {extra}")
    return Score(1.0, "only items the customer asked for, at every turn")


@register
@evaluator(data_type="BOOLEAN", may_read=("expected_output.correction",))
def correction_honoured(*, output, expected_output=None, **kwargs) -> Score:
    """1.0 when the order reflects the customer's correction right after it was made;
    not applicable (no value) for conversations without one."""
    correction = (expected_output or {}).get("correction")
    if not correction:
        return Score(None, "not applicable: no correction in this conversation")
    turns = {t.get("turn"): t for t in _transcript(output)}
    after = turns.get(correction["turn"])
    if after is None:
        return Score(0.0, f"the conversation ended before turn {correction['turn']}")
    have = sum(int(i.get("quantity", 1)) for i in _items_at(after)
               if i["item_id"] == correction["item_id"])  # fmt: skip
    wanted = int(correction.get("quantity", 0))
    if have != wanted:
        return Score(0.0, f"after turn {correction['turn']}: {have} × {correction['item_id']}, "
                          f"asked for {wanted}")  # fmt: skip
    return Score(1.0, f"after turn {correction['turn']}: {have} × {correction['item_id']}")
