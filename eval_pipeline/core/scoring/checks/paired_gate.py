"""paired_gate: per gated metric, item by item against the baseline, is the candidate worse
by more than the margin? Sequential (the default): an anytime-valid confidence sequence on
the items in the order drawn (core/scoring/sequential.py); fixed: a paired test on the
tier's items, Holm-adjusted with the binary metrics. Its WARN is UNDECIDED."""

from __future__ import annotations

from collections.abc import Sequence

from eval_pipeline.core.scoring.checks.base import CheckSpec, GateCheck, register, sig, worst
from eval_pipeline.core.scoring.checks.gate_inputs import (
    GateInputs,
    comparison_row,
    declared_boolean,
)
from eval_pipeline.core.scoring.rows import Outcome, PairedRow, WorseItem
from eval_pipeline.core.scoring.sequential import Decision, decide

MAX_LISTED = 15
UNCHANGED = "the baseline's agent, prompt and model, and the same output on every item"


def paired_gate(inputs: GateInputs) -> GateCheck:
    worse = worse_items(inputs)
    if inputs.order is None:
        return _fixed(inputs, worse)
    rows = _sequential_rows(inputs)
    outcome = worst([r.outcome or "warn" for r in rows]) if rows else "pass"
    text = "UNCHANGED: " if inputs.unchanged else ""
    text += f"margin {inputs.margin}, sequential: " + "; ".join(f"{r.metric}: {r.note}"
                                                              for r in rows)  # fmt: skip
    return GateCheck("paired_gate", outcome, text, rows, worse)


def _fixed(inputs: GateInputs, worse: list[WorseItem]) -> GateCheck:
    """The fixed-n paired gate: per gated metric the paired difference's CI (Student t)
    and its Holm-adjusted p (``GateInputs.fixed_family``); a drop that is not significant
    once every metric is counted warns. UNCHANGED: a pass, whatever so few items show."""
    family = inputs.fixed_family
    rows, outcomes = [], []
    for metric, comparison in family.comparisons.items():
        p_holm = family.paired_holm[metric]
        decision = comparison.decision
        if decision == "fail" and p_holm >= inputs.alpha:
            decision = "warn"
        outcomes.append(decision)
        row = comparison_row(metric, comparison, p_holm=sig(p_holm), outcome=decision)
        if comparison.tested and declared_boolean(inputs.cand_scores, metric):
            row = row.model_copy(update={"note": "; ".join(filter(None, [
                "BOOLEAN: p from McNemar's exact test", row.note]))})  # fmt: skip
        rows.append(row)
    check = GateCheck("paired_gate", worst(outcomes), _describe(rows, inputs.margin), rows,
                      worse)  # fmt: skip
    if inputs.unchanged:  # nothing to decide: a pass, whatever so few items could show
        rows = [r.model_copy(update={"outcome": "pass"}) for r in check.rows]
        check = GateCheck("paired_gate", "pass", f"UNCHANGED: {UNCHANGED}; "
                          f"{check.description}", rows)  # fmt: skip
    return check


def _sequential_rows(inputs: GateInputs) -> list[PairedRow]:
    """Per gated metric, the confidence sequence over the paired differences in the order
    drawn, and its decision (UNCHANGED: a pass)."""
    gated = inputs.thresholds.gated_metrics
    order = [i for i in inputs.order or () if i in set(inputs.items)]
    differences = {}
    for metric in gated:
        b, c = inputs.paired(metric, order)
        differences[metric] = [y - x for x, y in zip(b, c, strict=True)]
    decided = decide(differences, margin=inputs.margin, alpha=inputs.share * len(gated))
    rows = []
    for metric, d in decided.items():
        outcome: Outcome = (
            "pass" if inputs.unchanged or d.decision is Decision.NOT_WORSE
            else "fail" if d.decision is Decision.WORSE else "warn"
        )  # fmt: skip
        rows.append(
            PairedRow(
                metric=metric, n=d.n, delta=round(d.estimate, 4), ci_low=round(d.lower, 4),
                ci_high=round(d.upper, 4), p_value=None, mde=None, decision=outcome,
                outcome=outcome, cases_needed=(d.n + d.more_to_decide) if d.more_to_decide
                else None, note=UNCHANGED if inputs.unchanged else d.note,
            )
        )  # fmt: skip
    return rows


def worse_items(inputs: GateInputs) -> list[WorseItem]:
    """The items whose primary metric dropped, the largest drops first."""
    b, c = inputs.paired(inputs.thresholds.primary_metric)
    drops = [WorseItem(item_id=i, baseline=round(x, 4), candidate=round(y, 4))
             for i, x, y in zip(inputs.items, b, c, strict=True) if y < x]  # fmt: skip
    drops.sort(key=lambda r: (r.candidate - r.baseline, r.item_id))
    return drops[:MAX_LISTED]


def _describe(rows: Sequence[PairedRow], margin: float) -> str:
    parts = [
        f"{r.metric}: {r.outcome} (Δ {r.delta:+.3f}, CI [{r.ci_low:+.3f}, "
        f"{r.ci_high:+.3f}], p={r.p_holm:.3g} Holm, MDE {r.mde:.3f}, n={r.n})"
        + (f"; {r.note}" if r.note else "")
        if r.p_value is not None
        else f"{r.metric}: Δ {r.delta:+.3f}, {r.note}"
        for r in rows
    ]
    return f"margin {margin}: " + "; ".join(parts)


register(CheckSpec(
    "paired_gate", "gate", blocking=True, run=paired_gate, undecided_on_warn=True,
    description="Blocks. Per gated metric, item by item against the baseline run (the "
    "latest full run of the baseline label's version). Sequential gate (the default): an "
    "anytime-valid confidence sequence for Δ, with more of the suite's cases drawn while it "
    "cannot tell (and, once they run short, the baseline's flaky cases repeated: metadata "
    "`repeats`); fails when it lies below 0 and Δ ≤ −margin, passes when it lies above "
    "−margin (the description ends with how many cases and model calls that took). Fixed "
    "gate: the 90% CI and the Holm-adjusted p < α on the tier's cases. When it cannot tell, "
    "the verdict is UNDECIDED: the check fails (on_undecided: fail, the default) or warns "
    "(warn), with about how many cases would decide it.",
))  # fmt: skip
