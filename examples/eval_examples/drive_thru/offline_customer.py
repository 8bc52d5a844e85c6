"""The offline model as the simulated customer (agents/customer.py): deterministic, it
follows the goal, an order of lines ``{item_id, name, quantity, size?, modifiers?}``:

1. the assistant asked which of several items: name the one in the goal;
2. the screen shows an item the goal does not have: ask to remove it;
3. a goal item is missing: order it (quantity, size, modifiers);
4. a quantity or size differs: correct it ("No, make that 2 Hash Browns");
5. everything matches: "That's all"; once the order is finished: done.

It reads the goal and the screen from the prompt's JSON lines, as an LLM would read them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, HumanMessage

from eval_pipeline.plugins import GOAL_MARK, SCREEN_MARK

if TYPE_CHECKING:
    from eval_pipeline.plugins import Turn


def respond(turn: Turn) -> AIMessage:
    goal = _after(turn.system, GOAL_MARK) or {}
    screen = _after(turn.system, SCREEN_MARK) or {}
    wanted = _lines(goal.get("expected_items") if isinstance(goal, dict) else goal)
    order = next((v for v in screen.values() if isinstance(v, dict)), {}) if screen else {}
    shown = _lines(order.get("items"))
    heard = [str(m.content) for m in turn.messages if isinstance(m, HumanMessage)]
    utterance, done = next_words(wanted, shown, bool(order.get("finalized")), heard[-1:])
    call = {"name": "CustomerReply", "args": {"utterance": utterance, "done": done},
            "id": "call_customer"}  # fmt: skip
    return AIMessage(content="", tool_calls=[call])


def next_words(
    wanted: list[dict[str, Any]], shown: list[dict[str, Any]], finalized: bool, heard: list[str]
) -> tuple[str, bool]:
    if finalized:
        return "", True
    last = heard[-1].lower() if heard else ""
    if "which" in last:
        for line in wanted:
            if line["name"].lower() in last:
                return f"I'd like {_say(line)}", False
    have = {line["item_id"]: line for line in shown}
    want = {line["item_id"]: line for line in wanted}
    for item_id, line in have.items():
        if item_id not in want:
            return f"Please remove the {line['name']}.", False
    for item_id, line in want.items():
        if item_id not in have:
            return f"I'd like {_say(line)}", False
    for item_id, line in want.items():
        got = have[item_id]
        if _mods(got) != _mods(line):
            return f"Please remove the {line['name']}.", False  # ordered again next turn
        if got.get("quantity") != line.get("quantity"):
            return f"No, make that {line['quantity']} {line['name']}.", False
        if (line.get("size") or None) != (got.get("size") or None) and line.get("size"):
            return f"Change the {line['name']} to {line['size']}.", False
    return "That's all, thanks.", False


def _say(line: dict[str, Any]) -> str:
    words = [str(line.get("quantity", 1))]
    if line.get("size"):
        words.append(line["size"])
    words.append(line["name"])
    for modifier in line.get("modifiers") or []:
        name = str(modifier.get("name") or modifier.get("modifier_id", "")).lower()
        action, _, ingredient = name.partition(" ")
        words.append(f"with {ingredient}" if action in {"add", "extra"} else name)
    return " ".join(words) + "."


def _mods(line: dict[str, Any]) -> set[str]:
    return {str(m.get("modifier_id")) for m in line.get("modifiers") or []}


def _lines(value: Any) -> list[dict[str, Any]]:
    return [v for v in value or [] if isinstance(v, dict) and "item_id" in v and "name" in v]


def _after(text: str, mark: str) -> Any:
    start = text.find(mark)
    if start < 0:
        return None
    line = text[start + len(mark) :].strip().splitlines()[0]
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None
