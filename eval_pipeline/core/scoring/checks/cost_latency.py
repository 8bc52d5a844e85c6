"""cost_latency: the paired ratio of cost and latency per item against the baseline, with
its CI; gated (blocking) when ``max_cost_ratio`` / ``max_latency_ratio`` is set."""

from __future__ import annotations

import math
from collections.abc import Sequence

from eval_pipeline.core.scoring.checks.gate_inputs import GateInputs
from eval_pipeline.core.scoring.checks.spec import CheckSpec, GateCheck, register, worst
from eval_pipeline.core.scoring.rows import Outcome, RatioRow
from eval_pipeline.core.scoring.stats import compare_paired
from eval_pipeline.core.store.records import ItemOutput


def cost_latency(inputs: GateInputs) -> GateCheck:
    """Paired log-ratios candidate/baseline of cost and latency per item."""
    base_out, cand_out, items = inputs.base_out, inputs.cand_out, inputs.items
    max_cost, max_latency = inputs.config.max_cost_ratio, inputs.config.max_latency_ratio
    alpha = inputs.alpha
    rows, outcomes = [], []
    for name, attr, limit in (
        ("cost", "cost_usd", max_cost),
        ("latency", "latency_ms", max_latency),
    ):
        base, cand = _item_means(base_out, attr), _item_means(cand_out, attr)
        both = [i for i in items if base.get(i, 0) > 0 and cand.get(i, 0) > 0]
        if len(both) < 2:
            rows.append(
                RatioRow(
                    metric=name, n=len(both), ratio=None, outcome="pass",
                    note="not enough non-zero values",
                )
            )  # fmt: skip
            continue
        logs = compare_paired(
            [0.0] * len(both), [math.log(cand[i] / base[i]) for i in both], margin=0.0, alpha=alpha
        )
        ratio, low, high = (math.exp(x) for x in (logs.delta, logs.ci_low, logs.ci_high))
        outcome: Outcome = "pass"
        if limit is not None:
            outcome = "fail" if low > limit else "warn" if ratio > limit else "pass"
        outcomes.append(outcome)
        rows.append(
            RatioRow(
                metric=name,
                n=len(both),
                ratio=round(ratio, 4),
                ci_low=round(low, 4),
                ci_high=round(high, 4),
                max_ratio=limit,
                outcome=outcome,
            )
        )
    text = "; ".join(
        f"{r.metric} ×{r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]"
        + (f" (max ×{r.max_ratio})" if r.max_ratio else " (not gated)")
        if r.ratio is not None
        else f"{r.metric}: {r.note}"
        for r in rows
    )
    gated = max_cost is not None or max_latency is not None
    if not gated:
        text = f"not tested (no max_cost_ratio or max_latency_ratio): {text}"
    return GateCheck("cost_latency", worst(outcomes), text, rows, tested=gated)


def _item_means(outputs: Sequence[ItemOutput], attr: str) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for o in outputs:
        sums.setdefault(o.item_id, []).append(float(getattr(o, attr)))
    return {k: sum(v) / len(v) for k, v in sums.items()}


register(CheckSpec(
    "cost_latency", "gate", blocking=True, run=cost_latency,
    description="Blocks when `max_cost_ratio` / `max_latency_ratio` is set: the paired ratio "
    "of cost and latency per item against the baseline, with its CI.",
))  # fmt: skip
