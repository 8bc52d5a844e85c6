"""Reference-free evaluators for production traces (no expected output exists).

Same calling convention as every evaluator here. Besides ``output`` (the agent's output
contract) they read ``metadata``: the trace's metadata plus ``latency_ms``, ``cost_usd``,
``level`` and ``status_message`` (see ``TraceRecord.evaluator_metadata``). Hallucinated
items are scored by ``no_hallucinated_items``, which needs no reference either.
"""

from __future__ import annotations

from collections.abc import Callable

from langfuse import Evaluation


def tool_protocol(*, input=None, output, expected_output=None, metadata=None, **kwargs):
    """1.0 if every add_item_to_order came after a lookup_menu_item (no adds: 1.0)."""
    calls = list((output or {}).get("tool_calls", []))
    looked_up = False
    for i, name in enumerate(calls):
        if name == "lookup_menu_item":
            looked_up = True
        elif name == "add_item_to_order" and not looked_up:
            return Evaluation(
                name="tool_protocol",
                value=0.0,
                comment=f"add_item_to_order (call {i + 1}) before any lookup",
            )
    return Evaluation(name="tool_protocol", value=1.0, comment="lookups before adds")


def no_error(*, input=None, output, expected_output=None, metadata=None, **kwargs):
    """0.0 if the trace ended in an error (level ERROR) or has no output at all."""
    meta = metadata or {}
    if str(meta.get("level", "")).upper() == "ERROR":
        reason = meta.get("status_message") or "level ERROR"
        return Evaluation(name="no_error", value=0.0, comment=f"error: {reason}")
    if output is None:
        return Evaluation(name="no_error", value=0.0, comment="no output recorded")
    return Evaluation(name="no_error", value=1.0, comment="completed")


def latency_within(budget_ms: float) -> Callable[..., Evaluation]:
    def latency_within(*, input=None, output, expected_output=None, metadata=None, **kwargs):
        latency = (metadata or {}).get("latency_ms")
        if latency is None:
            return Evaluation(name="latency_within", value=None, comment="no latency recorded")
        ok = latency <= budget_ms
        return Evaluation(
            name="latency_within",
            value=float(ok),
            comment=f"{latency:.0f} ms (budget {budget_ms:.0f} ms)",
        )

    return latency_within


def cost_within(budget_usd: float) -> Callable[..., Evaluation]:
    def cost_within(*, input=None, output, expected_output=None, metadata=None, **kwargs):
        cost = float((metadata or {}).get("cost_usd") or 0.0)
        return Evaluation(
            name="cost_within",
            value=float(cost <= budget_usd),
            comment=f"${cost:.5f} (budget ${budget_usd:.5f})",
        )

    return cost_within
