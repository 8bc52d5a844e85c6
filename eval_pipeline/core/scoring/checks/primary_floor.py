"""threshold: the primary metric's mean is at least the run's ``--threshold``
(``min_primary``); a run that sets none does not list it."""

from __future__ import annotations

from eval_pipeline.core.scoring.checks.spec import (
    CheckOutcome,
    CheckSpec,
    ThresholdInputs,
    register,
)
from eval_pipeline.core.scoring.rows import PrimaryFloorRow


def check_primary_floor(inputs: ThresholdInputs) -> CheckOutcome | None:
    minimum = inputs.min_primary
    if minimum is None:
        return None  # not asked for in this run
    metric = inputs.thresholds.primary_metric
    value = inputs.summary.metric(metric)
    passed = value is not None and value >= minimum
    text = f"{metric} mean {value} {'≥' if passed else '<'} --threshold {minimum}"
    return CheckOutcome(passed, text, [PrimaryFloorRow(metric=metric, mean=value,
                                                       minimum=minimum, ok=passed)])  # fmt: skip


register(CheckSpec(
    "threshold", "threshold", blocking=True, run=check_primary_floor,
    description="Blocks. The primary metric's mean is at least the run's `--threshold` "
    "(`min_primary`); not tested when the run sets none.",
))  # fmt: skip
