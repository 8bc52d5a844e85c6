"""category_floors: each category's mean is at least its floor (a warning)."""

from __future__ import annotations

from eval_pipeline.core.scoring.checks.spec import (
    CheckOutcome,
    CheckSpec,
    ThresholdInputs,
    not_tested,
    register,
)
from eval_pipeline.core.scoring.rows import FloorRow


def check_category_floors(inputs: ThresholdInputs) -> CheckOutcome:
    summary, thresholds = inputs.summary, inputs.thresholds
    if not thresholds.category_floors:
        return not_tested("the thresholds set no category_floors")
    rows: list[FloorRow] = []
    failed = []
    for metric, floors in thresholds.category_floors.items():
        for category, floor in floors.items():
            row = summary.by_category.get(category)
            value = row.means.get(metric) if row else None
            ok = value is None or value >= floor  # a tier without the category can't miss it
            rows.append(FloorRow(metric=metric, category=category, mean=value, floor=floor,
                                 ok=ok))  # fmt: skip
            if not ok:
                failed.append(f"{category} {metric} {value} < {floor}")
    if not any(r.mean is not None for r in rows):
        return CheckOutcome(True, "not tested: no case of a floored category in this tier",
                            rows, tested=False)  # fmt: skip
    text = "every category at or above its floor" if not failed else "; ".join(failed)
    return CheckOutcome(not failed, text, rows)


register(CheckSpec(
    "category_floors", "threshold", blocking=False, run=check_category_floors,
    description="Warns. Each category's mean is at least its floor (`category_floors`).",
))  # fmt: skip
