"""Reference-free evaluators for production traces (no expected output exists).

Same calling convention as every evaluator here. Besides ``output`` (the agent's output
contract) they read ``metadata``: the trace's metadata plus ``latency_ms``, ``cost_usd``,
``level`` and ``status_message`` (see ``TraceRecord.evaluator_metadata``). A project's own
reference-free evaluators score traces too (the drive-thru example's ``tool_protocol`` and
``no_hallucinated_items``).
"""

from __future__ import annotations

from eval_pipeline.evaluators.declare import Evaluator, Score, evaluator
from eval_pipeline.evaluators.registry import register


@register
@evaluator(data_type="BOOLEAN")
def no_error(*, output, metadata=None, **kwargs) -> Score:
    """0.0 if the trace ended in an error (level ERROR) or has no output at all."""
    meta = metadata or {}
    if str(meta.get("level", "")).upper() == "ERROR":
        return Score(0.0, f"error: {meta.get('status_message') or 'level ERROR'}")
    if output is None:
        return Score(0.0, "no output recorded")
    return Score(1.0, "completed")


@register
def latency_within(budget_ms: float) -> Evaluator:
    """1.0 when the item (or trace) took at most ``budget_ms`` milliseconds."""
    _positive("budget_ms", budget_ms)

    @evaluator(name="latency_within", params={"budget_ms": budget_ms}, data_type="BOOLEAN")
    def check(*, metadata=None, **kwargs) -> Score:
        latency = (metadata or {}).get("latency_ms")
        if latency is None:
            return Score(None, "no latency recorded")
        return Score(float(latency <= budget_ms), f"{latency:.0f} ms (budget {budget_ms:.0f} ms)")

    return check


@register
def cost_within(budget_usd: float) -> Evaluator:
    """1.0 when the item (or trace) cost at most ``budget_usd`` dollars."""
    _positive("budget_usd", budget_usd)

    @evaluator(name="cost_within", params={"budget_usd": budget_usd}, data_type="BOOLEAN")
    def check(*, metadata=None, **kwargs) -> Score:
        cost = (metadata or {}).get("cost_usd")
        if cost is None:  # unknown is not within budget: no value, said why
            return Score(
                None,
                "no cost recorded (a trace's root observation carries none "
                "of its own: Langfuse records cost on its generations)",
            )
        return Score(float(cost <= budget_usd), f"${cost:.5f} (budget ${budget_usd:.5f})")

    return check


def _positive(name: str, budget: float) -> None:
    """A budget below 0 failed every item (0 passes only an instant, free one: allowed)."""
    if budget < 0:
        raise ValueError(f"{name} must be 0 or more, not {budget:g}")  # (the loader: exit 2)
