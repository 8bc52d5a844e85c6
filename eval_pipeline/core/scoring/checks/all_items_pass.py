"""all_items_pass: every item scores 1.0 on each ``all_items_pass`` metric."""

from __future__ import annotations

from eval_pipeline.core.scoring.checks.spec import (
    CheckOutcome,
    CheckSpec,
    ThresholdInputs,
    not_tested,
    register,
)
from eval_pipeline.core.scoring.rows import CheckRow, ItemBelowRow


def check_all_items_pass(inputs: ThresholdInputs) -> CheckOutcome:
    scores, thresholds = inputs.scores, inputs.thresholds
    if not thresholds.all_items_pass:
        return not_tested("the thresholds list no all_items_pass metrics")
    rows: list[CheckRow] = [
        ItemBelowRow(metric=s.evaluator, item_id=s.item_id, repeat=s.repeat, value=s.value,
                     comment=s.comment)
        for s in scores
        if s.evaluator in thresholds.all_items_pass and s.value != 1.0
    ]  # fmt: skip
    seen = {s.evaluator for s in scores}
    missing = [m for m in thresholds.all_items_pass if m not in seen]
    if missing:
        return CheckOutcome(False, f"no scores for {', '.join(missing)}", rows)
    if rows:
        return CheckOutcome(False, f"{len(rows)} item(s) below 1.0", rows)
    return CheckOutcome(True, f"every item scored 1.0 on {', '.join(thresholds.all_items_pass)}")


register(CheckSpec(
    "all_items_pass", "threshold", blocking=True, run=check_all_items_pass,
    description="Blocks. Every item scores 1.0 on each `all_items_pass` metric (for example: "
    "no hallucinated menu item).",
))  # fmt: skip
