"""The regression gate: a candidate run against its baseline, item by item, with evidence.

1. Baseline: the latest complete full-tier run of the version the baseline label points
   to; when the candidate *is* that version (the nightly run), its previous complete full
   run, so a provider's drift (same prompt, same model name, worse answers) is caught.
2. Comparability: same dataset version, the candidate's items all in the baseline.
   Otherwise the gate says "not comparable: …" and gives no number. Evaluators must be the
   same versions too; when only they differ, the caller re-scores the baseline's stored
   outputs with the candidate's evaluators (``rescored``) and the report says so.
3. Checks: a paired comparison per gated metric (fail only if also significant after
   Holm across the gated and binary metrics), exact McNemar on binary metrics, per-category
   deltas of the primary metric (warning only), and paired log-ratios of cost and latency
   (gated when a maximum ratio is configured). Items missing from a run count as 0.
4. Nothing passes untested: a check with nothing configured to test is ``tested=False``
   (reports say N/A, Dagster skips it), and a slice of fewer than MIN_PAIRED_N items gets
   its Δ and no test (stats.compare_paired).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval_pipeline.core.running.memo import PARAMS_NOT_IN_KEY
from eval_pipeline.core.scoring.reducers import outcome_flips, reduce_items
from eval_pipeline.core.scoring.rows import (
    BinaryRow,
    CheckRow,
    Outcome,
    PairedRow,
    RatioRow,
    WorseItem,
)
from eval_pipeline.core.scoring.sequential import Decision, decide
from eval_pipeline.core.scoring.stats import (
    MIN_PAIRED_N,
    PairedComparison,
    compare_paired,
    holm,
    mcnemar_exact,
    wilson_interval,
)
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord
from eval_pipeline.core.store.results_store import ResultsStore

GATE_CHECKS = ("paired_gate", "binary_gate", "category_deltas", "cost_latency")
MAX_LISTED = 15


@dataclass
class GateCheck:
    name: str  # one of GATE_CHECKS
    outcome: Outcome
    description: str
    rows: list[CheckRow] = field(default_factory=list)  # one per metric / category
    worse_items: list[WorseItem] = field(default_factory=list)
    tested: bool = True  # False: nothing was configured for it to test (not a pass)

    @property
    def blocking_failure(self) -> bool:
        return self.outcome == "fail" and self.name != "category_deltas"

    @property
    def undecided(self) -> bool:
        """The paired gate could not tell whether a gated metric got worse by more than the
        margin (too few items, or too much noise): the run is UNDECIDED, never a pass."""
        return self.name == "paired_gate" and self.outcome == "warn"

    @property
    def label(self) -> str:
        """PASS / WARN / FAIL / UNDECIDED, or N/A for a check that tested nothing."""
        if not self.tested:
            return "N/A"
        return "UNDECIDED" if self.undecided else self.outcome.upper()


@dataclass
class GateReport:
    candidate_run_id: str
    baseline_run_id: str | None
    comparable: bool
    problems: list[str]
    checks: list[GateCheck]
    notes: list[str] = field(default_factory=list)  # e.g. the baseline was re-scored

    @property
    def outcome(self) -> Outcome:
        outcomes = [c.outcome for c in self.checks]
        return "fail" if "fail" in outcomes else "warn" if "warn" in outcomes else "pass"


class NotComparable(ValueError):
    """The runs cannot be compared; the message says why in plain words."""


def find_baseline(
    store: ResultsStore, candidate: RunRecord, baseline_version: str
) -> RunRecord | None:
    """Latest complete full-tier run of ``baseline_version`` other than the candidate, and
    started before it when the candidate evaluates that same version; never a run a
    budget stopped (it lacks cases)."""
    runs = store.list_runs(
        suite=candidate.suite,
        prompt_version=baseline_version,
        status="complete",
        tier="full",
        limit=50,
    )
    for run in runs:  # newest first
        if run.run_id == candidate.run_id or run.stopped:
            continue
        if baseline_version == candidate.prompt_version and run.started_at >= candidate.started_at:
            continue
        return run
    return None


def comparability_problems(
    baseline: RunRecord, candidate: RunRecord, baseline_items: set[str], candidate_items: set[str]
) -> list[str]:
    problems = []
    if baseline.dataset_version != candidate.dataset_version:
        problems.append(
            f"dataset changed (baseline {baseline.dataset_version}, candidate "
            f"{candidate.dataset_version}): re-run the baseline on the current dataset"
        )
    if missing := sorted(candidate_items - baseline_items):
        problems.append(f"{len(missing)} item(s) not in the baseline run: {missing[:5]}")
    return problems


def evaluator_changes(baseline: RunRecord, candidate: RunRecord) -> dict[str, tuple[str, str]]:
    """Evaluators whose version differs between the runs: name → (baseline's, candidate's)."""
    return {
        name: (baseline.evaluator_versions.get(name) or "none", version)
        for name, version in candidate.evaluator_versions.items()
        if baseline.evaluator_versions.get(name) != version
    }


def describe_changes(changes: Mapping[str, tuple[str, str]]) -> str:
    return ", ".join(f"{k} {old} → {new}" for k, (old, new) in sorted(changes.items()))


def sig(p: float) -> float:
    """A p-value kept to 3 significant digits (rounding to decimals would turn 1e-9 into 0)."""
    return float(f"{p:.3g}")


def _paired_values(
    base: Mapping[str, float], cand: Mapping[str, float], items: Sequence[str]
) -> tuple[list[float], list[float]]:
    return [base.get(i, 0.0) for i in items], [cand.get(i, 0.0) for i in items]


def _row(metric: str, comparison: PairedComparison, **extra: Any) -> PairedRow:
    tested = comparison.tested
    return PairedRow(
        metric=metric,
        n=comparison.n,
        delta=round(comparison.delta, 4),
        ci_low=round(comparison.ci_low, 4) if tested else None,
        ci_high=round(comparison.ci_high, 4) if tested else None,
        p_value=sig(comparison.p_value) if tested else None,
        mde=round(comparison.mde, 4) if tested else None,
        decision=comparison.decision,
        cases_needed=comparison.cases_needed,
        note=comparison.note,
        **extra,
    )


@dataclass(frozen=True)
class Sequential:
    """The sequential paired gate's input: the items in the order they were drawn (the
    tier's first, then the suite's others in a seeded random order). Each pair counts as
    an independent draw (the confidence sequence's with-replacement form), not as one of
    the suite's N fixed values: an agent's answers are random (it samples, its model
    drifts), so the Δ to decide on is the expected difference of a case answered afresh,
    which the suite's own realised mean only estimates. Treating the pairs as the suite's
    fixed values made a sampling agent's wrong NOT WORSE at Δ = −margin 37% likely at
    α = 5% (100 cases, one answer each, simulated); independent draws: 2%."""

    order: Sequence[str]


# How the model was reached, not what answered: a recorded or replayed run of the same
# agent (a replay has no endpoint) is the same agent; the memo's key leaves out timeouts
# and retries too. Equal outputs on every item are required besides.
NOT_THE_AGENT = PARAMS_NOT_IN_KEY | {"recording", "base_url"}


UNCHANGED = "the baseline's agent, prompt and model, and the same output on every item"


def fingerprint(run: RunRecord) -> tuple[str, str, str]:
    """What makes an agent the same agent: its code, its prompt's text and its model with
    the parameters that shape an answer."""
    params = {k: v for k, v in run.model_params.items() if k not in NOT_THE_AGENT}
    return run.agent_version, run.prompt_hash, json.dumps(params, sort_keys=True, default=str)


def unchanged(
    baseline: RunRecord, candidate: RunRecord,
    base_out: Sequence[ItemOutput], cand_out: Sequence[ItemOutput],
) -> bool:  # fmt: skip
    """The candidate is the baseline's agent again: the same ``fingerprint`` and the same
    output on every item it ran. Such a run is UNCHANGED, a pass that needs no statistics
    (an unchanged pull request never fails for lack of evidence). Evaluators are the
    comparability check's business: they are the same versions, or the baseline was
    re-scored with the candidate's."""
    if fingerprint(baseline) != fingerprint(candidate):
        return False
    before = {(o.item_id, o.repeat): o.output for o in base_out}
    return all(
        (o.item_id, o.repeat) in before and before[(o.item_id, o.repeat)] == o.output
        for o in cand_out
    )


def compare_runs(
    baseline: RunRecord,
    candidate: RunRecord,
    baseline_data: tuple[Sequence[ItemOutput], Sequence[ItemScore]],
    candidate_data: tuple[Sequence[ItemOutput], Sequence[ItemScore]],
    thresholds: Thresholds,
    categories: Mapping[str, str],
    *,
    margin: float | None = None,
    rescored: bool = False,
    sequential: Sequential | None = None,
) -> GateReport:
    """All gate checks for a candidate run against its baseline (raises NotComparable).
    ``rescored``: the baseline's scores were made again with the candidate's evaluators,
    so evaluator versions that differ are no obstacle. ``sequential``: the paired gate is
    the anytime-valid one (core/scoring/sequential.py) on the items in the order drawn."""
    config = thresholds.regression
    margin = config.margin if margin is None else margin
    (base_out, base_scores), (cand_out, cand_scores) = baseline_data, candidate_data
    items = sorted({o.item_id for o in cand_out})
    problems = comparability_problems(
        baseline, candidate, {o.item_id for o in base_out}, set(items)
    )
    changes = evaluator_changes(baseline, candidate)
    if changes and not rescored:
        problems.append(f"evaluator versions differ: {describe_changes(changes)}")
    if problems:
        raise NotComparable("not comparable: " + "; ".join(problems))
    notes = [
        f"baseline re-scored with this run's evaluators ({describe_changes(changes)}): "
        "the same outputs, no agent calls"
    ] if changes else []  # fmt: skip

    def values(scores: Sequence[ItemScore], metric: str) -> dict[str, float]:
        return reduce_items(scores, metric, config.reducer, config.pass_threshold)

    primary = thresholds.primary_metric
    worse = _worse_items(values(base_scores, primary), values(cand_scores, primary), items)
    gated, binary = thresholds.gated_metrics, thresholds.binary_metrics
    flips = {m: _passes(values, base_scores, cand_scores, items, m, config.pass_threshold)
             for m in binary}  # fmt: skip
    same = unchanged(baseline, candidate, base_out, cand_out) and all(
        b == c
        for m in gated
        for b, c in zip(
            *_paired_values(values(base_scores, m), values(cand_scores, m), items), strict=True
        )
    )  # (and the same scores: an evaluator that scores equal outputs apart is not ignored)
    if sequential is None:
        boolean = {m: _passes(values, base_scores, cand_scores, items, m, config.pass_threshold)
                   for m in gated if declared_boolean(cand_scores, m)}  # fmt: skip
        check, binary_holm = _fixed_paired(values, base_scores, cand_scores, items, gated,
                                           flips, margin, config.alpha, worse,
                                           boolean)  # fmt: skip
        if same:  # nothing to decide: a pass, whatever so few items could show
            rows = [r.model_copy(update={"outcome": "pass"}) for r in check.rows]
            check = GateCheck("paired_gate", "pass", f"UNCHANGED: {UNCHANGED}; "
                              f"{check.description}", rows)  # fmt: skip
        checks, binary_alpha = [check], config.alpha
    else:
        # One α for the whole gate (Bonferroni): each sequence at α/(k+b), McNemar's
        # family at α·b/(k+b); the union bound holds for time-uniform events too.
        share = config.alpha / max(1, len(gated) + len(binary))
        order = [i for i in sequential.order if i in set(items)]
        rows = _sequential_rows(values, base_scores, cand_scores, order, gated, margin,
                                share * len(gated), same)  # fmt: skip
        outcome = _worst([r.outcome or "warn" for r in rows]) if rows else "pass"
        text = "UNCHANGED: " if same else ""
        text += f"margin {margin}, sequential: " + "; ".join(f"{r.metric}: {r.note}" for r in rows)
        checks = [GateCheck("paired_gate", outcome, text, rows, worse)]
        binary_holm = holm([mcnemar_exact(*flips[m]) for m in binary])
        binary_alpha = share * len(binary)
    checks.append(_binary_check(flips, binary_holm, binary_alpha, len(items)))
    checks.append(
        _category_check(
            values(base_scores, primary),
            values(cand_scores, primary),
            items,
            categories,
            primary,
            margin,
            config.alpha,
        )
    )
    checks.append(
        _ratio_check(
            base_out, cand_out, items, config.max_cost_ratio, config.max_latency_ratio, config.alpha
        )
    )
    return GateReport(candidate.run_id, baseline.run_id, True, [], checks, notes)


def declared_boolean(scores: Sequence[ItemScore], metric: str) -> bool:
    """The metric's scores are pass/fail by declaration: BOOLEAN (0 or 1), or CATEGORICAL
    valued by a pass set or an order of two (core/scoring/categories.py: 0 or 1 too)."""
    given = [s for s in scores if s.evaluator == metric and s.value is not None]
    return bool(given) and all(
        s.data_type == "BOOLEAN" or (s.data_type == "CATEGORICAL" and s.value in (0.0, 1.0))
        for s in given
    )


def _fixed_paired(
    values: Any, base_scores: Sequence[ItemScore], cand_scores: Sequence[ItemScore],
    items: Sequence[str], gated: Sequence[str], flips: Mapping[str, tuple[list, list]],
    margin: float, alpha: float, worse: list[WorseItem],
    boolean: Mapping[str, tuple[list[bool], list[bool]]],
) -> tuple[GateCheck, list[float]]:  # fmt: skip
    """The fixed-n paired gate: per gated metric the paired difference's CI (Student t),
    and its p-value from the t-test, or for a BOOLEAN metric (``boolean``: its pass/fail
    per item) from the exact McNemar test on the items that flipped (McNemar 1947; the
    binomial form, stats.mcnemar_exact); all in one Holm family with the binary metrics'
    McNemar tests. The check, and the binary metrics' adjusted p-values."""
    paired = {}
    for m in gated:
        comparison = compare_paired(
            *_paired_values(values(base_scores, m), values(cand_scores, m), items),
            margin=margin,
            alpha=alpha,
        )
        if m in boolean and comparison.tested:
            comparison = dataclasses.replace(comparison, p_value=mcnemar_exact(*boolean[m]))
        paired[m] = comparison
    family = [p.p_value for p in paired.values()] + [mcnemar_exact(*f) for f in flips.values()]
    # (an untested comparison enters with p = 1: it can only make the others stricter)
    adjusted = holm(family)
    rows, outcomes = [], []
    for (metric, comparison), p_holm in zip(paired.items(), adjusted, strict=False):
        decision = comparison.decision
        if decision == "fail" and p_holm >= alpha:
            decision = "warn"  # a drop, but not significant once every metric is counted
        outcomes.append(decision)
        row = _row(metric, comparison, p_holm=sig(p_holm), outcome=decision)
        if metric in boolean and comparison.tested:
            row = row.model_copy(update={"note": "; ".join(filter(None, [
                "BOOLEAN: p from McNemar's exact test", row.note]))})  # fmt: skip
        rows.append(row)
    check = GateCheck("paired_gate", _worst(outcomes), _describe(rows, margin), rows, worse)
    return check, adjusted[len(paired) :]


def _binary_check(
    flips: Mapping[str, tuple[list[bool], list[bool]]], p_holm: Sequence[float], alpha: float,
    n: int,
) -> GateCheck:  # fmt: skip
    """Exact McNemar per pass/fail metric: fail when more items newly fail than newly pass,
    significantly (``p_holm``: the adjusted p-values, in the order of ``flips``)."""
    if not flips:
        return GateCheck("binary_gate", "pass", "not tested: no pass/fail metrics are "
                         "configured (regression.binary_metrics or all_items_pass)",
                         tested=False)  # fmt: skip
    rows, outcomes = [], []
    for (metric, (old, new)), adjusted in zip(flips.items(), p_holm, strict=True):
        b = sum(o and not n for o, n in zip(old, new, strict=True))
        c = sum(n and not o for o, n in zip(old, new, strict=True))
        outcome: Outcome = "fail" if adjusted < alpha else "warn" if b > c else "pass"
        outcomes.append(outcome)
        low, high = wilson_interval(sum(new), len(new))
        rows.append(
            BinaryRow(
                metric=metric,
                n=n,
                newly_failing=b,
                newly_passing=c,
                baseline_rate=round(sum(old) / len(old), 4) if old else None,
                candidate_rate=round(sum(new) / len(new), 4) if new else None,
                candidate_wilson_95=f"[{low:.3f}, {high:.3f}]",
                p_value=sig(mcnemar_exact(old, new)),
                p_holm=sig(adjusted),
                outcome=outcome,
            )
        )
    text = "; ".join(
        f"{r.metric}: {r.newly_failing} newly failing, "
        f"{r.newly_passing} newly passing (p={r.p_holm:.3g})"
        for r in rows
    )
    return GateCheck("binary_gate", _worst(outcomes), text, rows)


def _sequential_rows(
    values: Any, base_scores: Sequence[ItemScore], cand_scores: Sequence[ItemScore],
    order: Sequence[str], gated: Sequence[str], margin: float, alpha: float, same: bool,
) -> list[PairedRow]:  # fmt: skip
    """The sequential paired gate's rows: per gated metric, the confidence sequence over
    the paired differences in the order drawn, and its decision (UNCHANGED: a pass)."""
    differences = {}
    for metric in gated:
        b, c = _paired_values(values(base_scores, metric), values(cand_scores, metric), order)
        differences[metric] = [y - x for x, y in zip(b, c, strict=True)]
    decided = decide(differences, margin=margin, alpha=alpha)
    rows = []
    for metric, d in decided.items():
        outcome: Outcome = (
            "pass" if same or d.decision is Decision.NOT_WORSE
            else "fail" if d.decision is Decision.WORSE else "warn"
        )  # fmt: skip
        note = UNCHANGED if same else d.note
        rows.append(
            PairedRow(
                metric=metric, n=d.n, delta=round(d.estimate, 4), ci_low=round(d.lower, 4),
                ci_high=round(d.upper, 4), p_value=None, mde=None, decision=outcome,
                outcome=outcome, cases_needed=(d.n + d.more_to_decide) if d.more_to_decide
                else None, note=note,
            )
        )  # fmt: skip
    return rows


def _passes(
    values: Any, base_scores: Sequence[ItemScore], cand_scores: Sequence[ItemScore],
    items: Sequence[str], metric: str, pass_threshold: float,
) -> tuple[list[bool], list[bool]]:  # fmt: skip
    """Per item, whether the metric passed (≥ ``pass_threshold``) in the baseline and in
    the candidate: what McNemar's test counts."""
    b, c = _paired_values(values(base_scores, metric), values(cand_scores, metric), items)
    return [v >= pass_threshold for v in b], [v >= pass_threshold for v in c]


def _worst(outcomes: Sequence[Outcome]) -> Outcome:
    return "fail" if "fail" in outcomes else "warn" if "warn" in outcomes else "pass"


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


def _worse_items(
    base: Mapping[str, float], cand: Mapping[str, float], items: Sequence[str]
) -> list[WorseItem]:
    drops = [
        WorseItem(
            item_id=i, baseline=round(base.get(i, 0.0), 4), candidate=round(cand.get(i, 0.0), 4)
        )
        for i in items
        if cand.get(i, 0.0) < base.get(i, 0.0)
    ]
    drops.sort(key=lambda r: (r.candidate - r.baseline, r.item_id))
    return drops[:MAX_LISTED]


def _category_check(
    base: Mapping[str, float],
    cand: Mapping[str, float],
    items: Sequence[str],
    categories: Mapping[str, str],
    metric: str,
    margin: float,
    alpha: float,
) -> GateCheck:
    """Per-category deltas of the primary metric: a warning, never blocking by itself."""
    comparisons = {}
    for category in sorted({categories.get(i, "(none)") for i in items}):
        members = [i for i in items if categories.get(i, "(none)") == category]
        comparisons[category] = compare_paired(
            *_paired_values(base, cand, members), margin=margin, alpha=alpha
        )
    tested = {k: c for k, c in comparisons.items() if c.tested}
    adjusted = dict(zip(tested, holm([c.p_value for c in tested.values()]), strict=True))
    rows, flagged = [], []
    for category, comparison in comparisons.items():  # (the tested slices are one family)
        p_holm = adjusted.get(category)
        rows.append(_row(metric, comparison, category=category,
                         p_holm=sig(p_holm) if p_holm is not None else None))  # fmt: skip
        if comparison.decision == "fail" and p_holm is not None and p_holm < alpha:
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


def _ratio_check(
    base_out: Sequence[ItemOutput],
    cand_out: Sequence[ItemOutput],
    items: Sequence[str],
    max_cost: float | None,
    max_latency: float | None,
    alpha: float,
) -> GateCheck:
    """Paired log-ratios candidate/baseline of cost and latency per item."""
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
    return GateCheck("cost_latency", _worst(outcomes), text, rows, tested=gated)


def _item_means(outputs: Sequence[ItemOutput], attr: str) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for o in outputs:
        sums.setdefault(o.item_id, []).append(float(getattr(o, attr)))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def not_comparable_report(candidate: RunRecord, baseline: RunRecord | None, reason: str):
    """Every gate check errors with the same plain reason."""
    checks = [GateCheck(name, "fail", reason) for name in GATE_CHECKS]
    return GateReport(
        candidate.run_id, baseline.run_id if baseline else None, False, [reason], checks
    )


def flips_across_runs(
    store: ResultsStore, run: RunRecord, metric: str, thresholds: Thresholds, *, limit: int = 10
) -> list[dict[str, Any]]:
    """Items whose pass/fail outcome changed between consecutive complete full runs of the
    same prompt version (nightly drift or flakiness), most flips first."""
    config = thresholds.regression
    runs = store.list_runs(
        suite=run.suite,
        prompt_version=run.prompt_version,
        status="complete",
        tier="full",
        limit=limit,
    )
    series = [
        reduce_items(store.read_scores(r.run_id), metric, config.reducer, config.pass_threshold)
        for r in reversed(runs)
    ]
    flips = outcome_flips(series, config.pass_threshold)
    rows = [{"item_id": item, "flips": n, "runs": len(series)} for item, n in flips.items()]
    return sorted(rows, key=lambda r: (-r["flips"], r["item_id"]))[:MAX_LISTED]
