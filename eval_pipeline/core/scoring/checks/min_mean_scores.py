"""min_mean_scores: each metric's mean over the run's cases is at least its ``min_mean``."""

from __future__ import annotations

from eval_pipeline.core.scoring.checks.spec import (
    CheckOutcome,
    CheckSpec,
    ThresholdInputs,
    not_tested,
    register,
)
from eval_pipeline.core.scoring.rows import MeanRow


def check_min_mean(inputs: ThresholdInputs) -> CheckOutcome:
    summary, thresholds = inputs.summary, inputs.thresholds
    if not thresholds.min_mean:
        return not_tested("the thresholds set no min_mean")
    rows: list[MeanRow] = []
    failed = []
    for metric, minimum in thresholds.min_mean.items():
        value = summary.metric(metric)
        ok = value is not None and value >= minimum
        rows.append(MeanRow(metric=metric, mean=value, minimum=minimum, ok=ok))
        if not ok:
            failed.append(f"{metric} {value} < {minimum}")
    text = (
        "all means at or above their minimum"
        if not failed
        else "below minimum: " + ", ".join(failed)
    )
    return CheckOutcome(not failed, text, rows)


register(CheckSpec(
    "min_mean_scores", "threshold", blocking=True, run=check_min_mean,
    description="Blocks. Each metric's mean over the run's cases is at least its `min_mean` "
    "in the suite's thresholds file.",
))  # fmt: skip
