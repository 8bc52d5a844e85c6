"""paired_gate: per gated metric, item by item against the baseline, is the candidate worse
by more than the margin? Sequential (the default): anytime-valid tests on the pairs in the
order drawn, the pass/fail metrics among them (core/scoring/sequential.py); fixed: a paired
t-test on the tier's items, Holm-adjusted with the binary metrics, failing and passing
only what the anytime-valid tests back (passing on the full suite only). Its WARN is
UNDECIDED."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from eval_pipeline.core.errors import explanation_failed
from eval_pipeline.core.scoring.checks.gate_inputs import (
    GateInputs,
    comparison_row,
    declared_boolean,
)
from eval_pipeline.core.scoring.checks.spec import CheckSpec, GateCheck, register, sig, worst
from eval_pipeline.core.scoring.rows import Outcome, PairedRow, WorseItem
from eval_pipeline.core.scoring.sequential import (
    Decision,
    MetricDecision,
    count_pairs,
    decide,
    detectable_drop,
    finest_margin,
)
from eval_pipeline.core.scoring.stats import PairedComparison

MAX_LISTED = 15
DROP_COMPUTED_UP_TO = 300  # detectable_drop is exact, and cubic in the cases: 2 s at 200
UNCHANGED = "the baseline's agent, prompt and model, and the same output on every item"


def paired_gate(inputs: GateInputs) -> GateCheck:
    worse = worse_items(inputs)
    if inputs.order is None:
        return _fixed(inputs, worse)
    rows, errors = _sequential_rows(inputs)
    outcome = worst([r.outcome or "warn" for r in rows]) if rows else "pass"
    check = GateCheck("paired_gate", outcome, _sequential_text(inputs, rows), rows, worse,
                      errors=errors)  # fmt: skip
    return explain(check, inputs) if inputs.explain else check


def _sequential_text(inputs: GateInputs, rows: Sequence[PairedRow]) -> str:
    text = "UNCHANGED: " if inputs.unchanged else ""
    return (
        text
        + f"margin {inputs.margin}, sequential: "
        + "; ".join(f"{r.metric}: {r.note}" + (f"; {r.learned}" if r.learned else "") for r in rows)
    )


def explain(check: GateCheck, inputs: GateInputs) -> GateCheck:
    """The sequential check with what each undecided metric's pairs did establish
    (``learned``) on its rows and in its description; the fixed gate's is as it is."""
    if inputs.order is None:
        return check
    order = _order(inputs)
    rows = [r.model_copy(update={"learned": _learned(inputs, r.metric, order)})
            if r.outcome == "warn" else r
            for r in check.rows if isinstance(r, PairedRow)]  # (every row of this check is)
    return dataclasses.replace(check, rows=rows, description=_sequential_text(inputs, rows))


def _learned(inputs: GateInputs, metric: str, order: Sequence[str]) -> str:
    """``learned``, or the line saying it could not be composed: it explains an undecided
    metric and must never turn the verdict into an ERROR (a pass rate of 2/3 did)."""
    try:
        return learned(inputs, metric, differences(inputs, metric, order))
    except Exception as exc:  # (an explanation never decides a run)
        return explanation_failed("what these pairs establish", exc)


def _order(inputs: GateInputs) -> list[str]:
    """The candidate's items in the order drawn."""
    items = set(inputs.items)
    return [i for i in inputs.order or () if i in items]


def differences(inputs: GateInputs, metric: str, items: Sequence[str]) -> list[float]:
    """The paired differences (candidate − baseline) of ``metric`` on ``items``, in their
    order; for a pass/fail metric of the suite (``binary_metrics``), of its pass rate."""
    if metric in inputs.thresholds.binary_metrics and metric not in inputs.thresholds.gated_metrics:
        at = inputs.config.pass_threshold
        b, c = inputs.paired(metric, items)
        return [float(y >= at) - float(x >= at) for x, y in zip(b, c, strict=True)]
    b, c = inputs.paired(metric, items)
    return [y - x for x, y in zip(b, c, strict=True)]


def _decide(inputs: GateInputs, differences_: dict[str, list[float]], *,
            look_ahead: bool = True) -> dict[str, MetricDecision]:  # fmt: skip
    """The sequential tests (core/scoring/sequential.py) on each metric's differences:
    PASS needs every metric NOT WORSE, an intersection–union test, so each NOT WORSE runs at
    the full α (Berger 1982); FAIL needs one WORSE, so WORSE shares α over every metric the
    gate decides on (gated and pass/fail: Bonferroni, valid for time-uniform events).
    "About N more pairs" counts no further than the suite's cases (``suite_size``): the
    pairs are draws with replacement to the tests, but the suite has so many cases."""
    return decide(differences_, margin=inputs.margin, alpha_not_worse=inputs.alpha,
                  alpha_worse=inputs.alpha, family=len(inputs.sequential_metrics),
                  look_ahead=look_ahead, suite=inputs.suite_size)  # fmt: skip


def _fixed(inputs: GateInputs, worse: list[WorseItem]) -> GateCheck:
    """The fixed-n paired gate: per gated metric the paired difference's CI (Student t)
    and its Holm-adjusted p (``GateInputs.fixed_family``), each decision backed by the
    anytime-valid tests at one look (``fixed_decision``). UNCHANGED: a pass, whatever so
    few items show."""
    family = inputs.fixed_family
    valid = _decide(inputs, {m: differences(inputs, m, inputs.items) for m in family.comparisons},
                    look_ahead=False)  # fmt: skip
    rows, outcomes = [], []
    for metric, comparison in family.comparisons.items():
        p_holm = family.paired_holm[metric]
        v = valid[metric]
        decision, notes = fixed_decision(
            comparison, p_holm, alpha=inputs.alpha, tier=inputs.candidate.tier,
            not_worse=v.decision is Decision.NOT_WORSE, worse=v.upper <= 0, lower=v.lower,
        )  # fmt: skip
        outcomes.append(decision)
        if comparison.tested and declared_boolean(inputs.cand_scores, metric):
            notes.insert(0, "BOOLEAN: p from McNemar's exact test")
        row = comparison_row(metric, comparison, p_holm=sig(p_holm), outcome=decision)
        rows.append(row.model_copy(update={"note": "; ".join(notes)}))
    errors = [f"{m}: {len(missing)} of {len(inputs.items)} pairs lack a score (first: "
              f"{missing[0]}): the fixed gate cannot tell what they would say"
              for m in family.comparisons if (missing := inputs.missing(m))]  # fmt: skip
    check = GateCheck("paired_gate", worst(outcomes), _describe(rows, inputs.margin), rows,
                      worse, errors=errors)  # fmt: skip
    if inputs.unchanged:  # nothing to decide: a pass, whatever so few items could show
        rows = [r.model_copy(update={"outcome": "pass"}) for r in rows]  # (check.rows)
        check = GateCheck("paired_gate", "pass", f"UNCHANGED: {UNCHANGED}; "
                          f"{_describe(rows, inputs.margin)}", rows)  # fmt: skip
    return check


def fixed_decision(
    comparison: PairedComparison, p_holm: float, *, alpha: float, tier: str,
    not_worse: bool, worse: bool, lower: float,
) -> tuple[Outcome, list[str]]:  # fmt: skip
    """One gated metric's fixed-gate decision, and the notes that say why. The t interval
    (stats.compare_paired) proposes; the anytime-valid tests on the same pairs at one look
    (``not_worse``: NOT WORSE reached, with ``lower`` its bound; ``worse``: Δ < 0 shown,
    at α over the family) must back either side, so each side is valid whatever the
    differences' shape:

    - FAIL also needs the drop significant once every metric is counted (Holm) and shown
      by the WORSE test. The t interval alone (and the sign test, a test of the median,
      where every pair moved alike) called an unchanged mean worse in 31% of runs at
      n = 11 (differences +1 w.p. 0.1, else −1/9) and 59% at n = 5;
    - PASS also needs NOT WORSE by the anytime-valid bound (the t interval alone passed a
      drop of the margin in 11–18% of runs where most pairs tie), and the full suite: a
      hand-picked tier may fail a candidate, never pass it."""
    decision = comparison.decision
    notes = [comparison.note] if comparison.note else []
    if decision == "fail" and p_holm >= alpha:
        decision = "warn"
    if decision == "fail" and not worse:
        decision = "warn"
        notes.append("the drop is not shown by the anytime-valid bound (Δ < 0 at the "
                     "gate's level): not a regression found")  # fmt: skip
    if decision == "pass" and not not_worse:
        decision = "warn"
        notes.append(f"not worse by more than {max(0.0, -lower):.3f} by the "
                     "anytime-valid bound, not by the margin")  # fmt: skip
    if decision == "pass" and tier != "full":
        decision = "warn"
        notes.append(f"decided on the {tier} tier only: a hand-picked tier can fail a "
                     "candidate, never pass it (use the sequential gate, or --tier full)")
    return decision, notes


def _sequential_rows(inputs: GateInputs) -> tuple[list[PairedRow], list[str]]:
    """Per metric the gate decides on, the tests over the paired differences in the order
    drawn, and the decision (UNCHANGED: a pass). A pair with a missing score is left out
    and counted; when imputing the worst for those pairs (the best, for WORSE) would change
    the decision, the run cannot be decided from its scores: an error naming the metric."""
    order = _order(inputs)
    found = {m: differences(inputs, m, order) for m in inputs.sequential_metrics}
    lacking = {m: inputs.missing(m, order) for m in found}
    decided = _decide(inputs, found)
    errors = []
    for metric, missing in lacking.items():
        if not missing or decided[metric].decision is Decision.CONTINUE:
            continue
        fill = -1.0 if decided[metric].decision is Decision.NOT_WORSE else 1.0
        imputed = _decide(inputs, {metric: found[metric] + [fill] * len(missing)},
                          look_ahead=False)[metric]  # fmt: skip
        if imputed.decision is not decided[metric].decision:
            said = decided[metric].decision.value.replace("_", " ")
            errors.append(f"{metric}: {len(missing)} of {len(order)} pairs lack a score "
                          f"(first: {missing[0]}), and they could change the gate's "
                          f"decision ({said})")  # fmt: skip
    rows = []
    for metric, d in decided.items():
        outcome: Outcome = (
            "pass" if inputs.unchanged or d.decision is Decision.NOT_WORSE
            else "fail" if d.decision is Decision.WORSE else "warn"
        )  # fmt: skip
        note = UNCHANGED if inputs.unchanged else d.note
        if lacking[metric]:
            note += f"; {len(lacking[metric])} pair(s) without a score left out"
        rows.append(
            PairedRow(
                metric=metric, n=d.n, delta=d.estimate, ci_low=d.lower,
                ci_high=d.upper, p_value=None, mde=None, decision=outcome,
                outcome=outcome, cases_needed=(d.n + d.more_to_decide) if d.more_to_decide
                else None, note=note,
            )
        )  # fmt: skip
    return rows, errors


def learned(inputs: GateInputs, metric: str, pairs: list[float]) -> str:
    """What an undecided metric's pairs did establish, beyond the bound its note gives: how
    they split, the best bound so many pairs could ever give, whether the whole suite can
    decide this margin (else the finest margin it can), and the smallest drop it would
    catch with 80% probability (core/scoring/sequential.py ``detectable_drop``: as a
    pass/fail metric at the baseline's rate, churning as these pairs did)."""
    alpha, margin, n = inputs.alpha, inputs.margin, len(pairs)
    worse = sum(1 for x in pairs if x < 0)
    better = sum(1 for x in pairs if x > 0)
    parts = [f"{count_pairs(worse)} worse, {better} better, {n - worse - better} tied"]
    if n:
        parts.append(f"{count_pairs(n)} could at best show not worse by more than "
                     f"{finest_margin(n, alpha):.3f}")  # fmt: skip
    suite = inputs.suite_size
    if suite:
        finest = finest_margin(suite, alpha)
        parts.append(f"the whole suite ({suite} cases) can decide a margin of {margin}"
                     if finest <= margin else
                     f"the whole suite ({suite} cases) cannot decide a margin of {margin}: "
                     f"the finest it can is {finest:.3f}")  # fmt: skip
        if suite > DROP_COMPUTED_UP_TO:
            parts.append(f"(the drop it would catch is computed for suites of up to "
                         f"{DROP_COMPUTED_UP_TO} cases)")  # fmt: skip
            return "; ".join(parts)
        base = inputs.paired(metric)[0]
        rate = round(min(0.99, max(0.01, sum(base) / len(base))), 2) if base else 0.5
        # (rounded for the cache, then kept within 1 − rate as computed: round(1/3, 2)
        # = 0.33 exceeds 1 − 0.67 = 0.32999999999999996 and was refused)
        churn = min(round(better / n if n else 0.0, 2), 1 - rate)
        drop = detectable_drop(suite, alpha_worse=alpha / len(inputs.sequential_metrics),
                               margin=margin, base_rate=rate, flip=churn,
                               alpha_not_worse=alpha)  # fmt: skip
        parts.append(f"it would catch a drop of {drop:.2f} with 80% probability" if drop
                     else "no drop it could catch with 80% probability")  # fmt: skip
    return "; ".join(parts)


def worse_items(inputs: GateInputs) -> list[WorseItem]:
    """The items whose primary metric dropped, the largest drops first."""
    items, b, c = inputs.pairs(inputs.thresholds.primary_metric)
    drops = [WorseItem(item_id=i, baseline=x, candidate=y)
             for i, x, y in zip(items, b, c, strict=True) if y < x]  # fmt: skip
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
    explain=explain,
    description="Blocks. Per gated metric, item by item against the baseline run (the "
    "latest full run of the baseline label's version). Sequential gate (the default): an "
    "anytime-valid confidence sequence for Δ, with more of the suite's cases drawn while it "
    "cannot tell (and, once they run short, the baseline's flaky cases repeated: metadata "
    "`repeats`); fails when it lies below 0 and Δ ≤ −margin, passes when it lies above "
    "−margin (the description ends with how many cases and model calls that took). Fixed "
    "gate: the 90% CI and the Holm-adjusted p < α on the tier's cases, each side backed by "
    "the anytime-valid tests at one look. When it cannot tell, "
    "the verdict is UNDECIDED: the check fails (on_undecided: fail, the default) or warns "
    "(warn), with about how many cases would decide it.",
))  # fmt: skip
