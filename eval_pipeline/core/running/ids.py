"""Ids an agent or a library makes up afresh on every run, made steady for comparing.

A model returns a new tool-call id on every call (``call_…``), the tool result quotes it,
langgraph-supervisor gives each handoff-back message a ``uuid4()`` id, LangChain a run id
per message. Two runs of the same agent therefore never have equal requests or outputs,
though nothing that matters differs. ``steady`` replaces each such id by ``<id N>``, N its
order of first appearance in the value, so an id stays the same placeholder wherever it
recurs (a call and the result that answers it): two values are alike exactly when they
differ only in which ids were drawn. Only ids inside messages and tool calls are replaced
(a dict with a role or type and content or tool calls; a dict with a name and args or a
function): an ``id`` elsewhere — an order's, a product's — is content, and compared as is.
"""

from __future__ import annotations

from typing import Any

ID_FIELDS = frozenset({"id", "tool_call_id", "call_id", "run_id"})


def _carries_ids(value: dict[str, Any]) -> bool:
    message = ("role" in value or "type" in value) and ("content" in value or "tool_calls" in value)
    call = ("args" in value or "function" in value) and ("name" in value or "function" in value)
    return message or call


def steady(value: Any) -> Any:
    """``value`` with its made-up ids replaced by their order of first appearance."""
    seen: dict[str, str] = {}

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            ids = _carries_ids(item)
            return {k: (seen.setdefault(v, f"<id {len(seen) + 1}>")
                        if ids and k in ID_FIELDS and isinstance(v, str) and v else walk(v))
                    for k, v in item.items()}  # fmt: skip
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    return walk(value)
