"""category_deltas: the paired change of the primary metric per category against the
baseline (a warning, never blocking by itself)."""

from __future__ import annotations

from eval_pipeline.core.scoring.checks.gate_inputs import GateInputs, comparison_row
from eval_pipeline.core.scoring.checks.spec import CheckSpec, GateCheck, register, sig
from eval_pipeline.core.scoring.stats import MIN_PAIRED_N, compare_paired, holm


def category_deltas(inputs: GateInputs) -> GateCheck:
    """Per-category deltas of the primary metric: a warning, never blocking by itself."""
    items, categories, metric = inputs.items, inputs.categories, inputs.thresholds.primary_metric
    margin, alpha = inputs.margin, inputs.alpha
    comparisons = {}
    for category in sorted({categories.get(i, "(none)") for i in items}):
        members = [i for i in items if categories.get(i, "(none)") == category]
        comparisons[category] = compare_paired(
            *inputs.paired(metric, members), margin=margin, alpha=alpha
        )
    tested = {k: c for k, c in comparisons.items() if c.tested}
    adjusted = dict(zip(tested, holm([c.p_value for c in tested.values()]), strict=True))
    rows, flagged = [], []
    for category, comparison in comparisons.items():  # (the tested slices are one family)
        p_holm = adjusted.get(category)
        p = sig(p_holm) if p_holm is not None else None
        worse = comparison.decision == "fail" and p_holm is not None and p_holm < alpha
        row = comparison_row(metric, comparison, category=category, p_holm=p)
        if worse or comparison.decision == "pass":  # decided: no cases needed to decide it
            row = row.model_copy(update={"cases_needed": None})
        rows.append(row)
        if worse:
            flagged.append(f"{category} (Δ {comparison.delta:+.3f})")
    untested = len(comparisons) - len(tested)
    text = (
        ("categories that got worse: " + ", ".join(flagged))
        if flagged
        else "no category got significantly worse"
    ) + (f" ({untested} with fewer than {MIN_PAIRED_N} items: not tested)" if untested else "")
    if not tested:
        return GateCheck("category_deltas", "pass", f"not tested: every category has fewer "
                         f"than {MIN_PAIRED_N} items", rows, tested=False)  # fmt: skip
    return GateCheck("category_deltas", "warn" if flagged else "pass", text, rows)


register(CheckSpec(
    "category_deltas", "gate", blocking=False, run=category_deltas,
    description="Warns. Paired Δ of the primary metric per category against the baseline; a "
    f"category with fewer than {MIN_PAIRED_N} items is shown, not tested.",
))  # fmt: skip
