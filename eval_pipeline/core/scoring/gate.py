"""The regression gate: a candidate run against its baseline, item by item, with evidence.

1. Baseline: chosen when the run is planned (core/evaluation/baseline.py, from the store's
   history: core/store/baselines.py).
2. Comparability: same dataset version, the candidate's items all in the baseline.
   Otherwise the gate says "not comparable: …" and gives no number. Evaluators must be the
   same versions too; when only they differ, the caller re-scores the baseline's stored
   outputs with the candidate's evaluators (``rescored``) and the report says so.
3. Checks: every registered gate check (core/scoring/checks: the paired comparison per
   gated metric, McNemar on binary metrics, per-category deltas, cost and latency ratios,
   and any a project registers), each given the same ``GateInputs``. Items missing from a
   run count as 0.
4. Nothing passes untested: a check with nothing configured to test is ``tested=False``
   (reports say N/A, Dagster skips it), and a slice of fewer than MIN_PAIRED_N items gets
   its Δ and no test (stats.compare_paired).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval_pipeline.core.errors import ConfigurationError, explanation_failed
from eval_pipeline.core.running.ids import steady
from eval_pipeline.core.running.memo import PARAMS_NOT_IN_KEY
from eval_pipeline.core.scoring.checks import GateCheck, GateInputs, checks, spec
from eval_pipeline.core.scoring.reducers import margin_scale, per_answer_drop
from eval_pipeline.core.scoring.rows import Outcome
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord


@dataclass
class GateReport:
    candidate_run_id: str
    baseline_run_id: str | None
    comparable: bool
    problems: list[str]
    checks: list[GateCheck]
    notes: list[str] = field(default_factory=list)  # e.g. the baseline was re-scored
    inputs: GateInputs | None = field(default=None, repr=False, compare=False)

    def explained(self) -> GateReport:
        """The report with what its checks can say once it is the one reported
        (``CheckSpec.explain``: an undecided metric's ``learned``), if they have not yet."""
        if self.inputs is None or self.inputs.explain:
            return self
        checks_ = []
        for check in self.checks:
            declared = spec(check.name)
            explain = declared.explain if declared is not None else None
            checks_.append(explain_safely(explain, check, self.inputs) if explain else check)
        return dataclasses.replace(self, checks=checks_)

    @property
    def outcome(self) -> Outcome:
        outcomes = [c.outcome for c in self.checks]
        return "fail" if "fail" in outcomes else "warn" if "warn" in outcomes else "pass"

    def check(self, name: str) -> GateCheck | None:
        return next((c for c in self.checks if c.name == name), None)


def explain_safely(explain: Callable[[GateCheck, GateInputs], GateCheck], check: GateCheck,
                   inputs: GateInputs) -> GateCheck:  # fmt: skip
    """A check's ``explain`` (a project's plugin may register one too); when it fails, the
    check as decided with a line saying so: an explanation never changes a verdict."""
    try:
        told = explain(check, inputs)
        if _decided(told) != _decided(check):
            raise ValueError("it changed what the check decided")
        return told
    except Exception as exc:  # (an explanation never decides a run)
        said = explanation_failed(f"{check.name}'s explanation", exc)
        return dataclasses.replace(check, description=f"{check.description}; {said}")


def _decided(check: GateCheck) -> tuple[Any, ...]:
    """What a check decided, which its explanation must leave as it is."""
    rows = [(getattr(r, "outcome", None), getattr(r, "delta", None)) for r in check.rows]
    return check.outcome, check.tested, check.errors, rows


class NotComparable(ConfigurationError):
    """The runs cannot be compared; the message says why in plain words."""


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
    suite_size: int | None = None  # the cases the gate could draw (the baseline's)
    explain: bool = True  # False: a verdict the run goes on from (GateReport.explained)


# How the model was reached, not what answered: a recorded or replayed run of the same
# agent (a replay has no endpoint) is the same agent; the memo's key leaves out timeouts
# and retries too. Equal outputs on every item are required besides.
NOT_THE_AGENT = PARAMS_NOT_IN_KEY | {"recording", "base_url"}


def fingerprint(run: RunRecord) -> tuple[str, str, str]:
    """What makes an agent the same agent: its code, its prompt's text and its model with
    the parameters that shape an answer."""
    params = {k: v for k, v in run.model_params.items() if k not in NOT_THE_AGENT}
    return run.agent_version, run.prompt_hash, json.dumps(params, sort_keys=True, default=str)


def unchanged(
    baseline: RunRecord, candidate: RunRecord,
    base_out: Sequence[ItemOutput], cand_out: Sequence[ItemOutput],
) -> bool:  # fmt: skip
    """The candidate is the baseline's agent again: both agents' versions are known (an
    HTTP service without ``version:`` never is), the same ``fingerprint`` (its code, its
    installed dependencies, its prompt, its model) and the same output on every item the
    baseline ran (the ids a model or a library draws afresh aside), each of them run again
    (a tier alone cannot tell: an unchanged agent's other items come from the memo at no
    cost). Such a run is UNCHANGED, a pass that needs
    no statistics. Evaluators are the comparability check's business: they are the same
    versions, or the baseline was re-scored with the candidate's."""
    if not (baseline.agent_versioned and candidate.agent_versioned):
        return False
    if fingerprint(baseline) != fingerprint(candidate):
        return False
    before = {(o.item_id, o.repeat): o.output for o in base_out}
    after = {(o.item_id, o.repeat): o.output for o in cand_out}
    return before.keys() <= after.keys() and all(
        after[k] == v or steady(after[k]) == steady(v) for k, v in before.items()
    )  # (alike but for the ids a model or a library drew: core/running/ids.py)


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
    """Every registered gate check for a candidate run against its baseline (raises
    NotComparable). ``rescored``: the baseline's scores were made again with the
    candidate's evaluators, so evaluator versions that differ are no obstacle.
    ``sequential``: the paired gate is the anytime-valid one (core/scoring/sequential.py)
    on the items in the order drawn."""
    (base_out, base_scores), (cand_out, cand_scores) = baseline_data, candidate_data
    items = sorted({o.item_id for o in cand_out})
    problems = comparability_problems(
        baseline, candidate, {o.item_id for o in base_out}, set(items)
    )
    changes = evaluator_changes(baseline, candidate)
    if changes and not rescored:
        problems.append(f"evaluator versions differ: {describe_changes(changes)}")
    reducer = thresholds.regression.reducer
    if reducer != "mean" and baseline.repeats != candidate.repeats:
        problems.append(f"the suite reduces repeats by {reducer!r}, which measures "
                        f"{baseline.repeats} and {candidate.repeats} answers of a case "
                        f"differently (the baseline's and this run's): run with --repeat "
                        f"{baseline.repeats}")  # fmt: skip
    if problems:
        raise NotComparable("not comparable: " + "; ".join(problems))
    notes = [
        f"baseline re-scored with this run's evaluators ({describe_changes(changes)}): "
        "the same outputs, no agent calls"
    ] if changes else []  # fmt: skip
    gate_margin = thresholds.regression.margin if margin is None else margin
    notes += _scale_note(thresholds, candidate.repeats, gate_margin, base_scores)
    inputs = GateInputs(
        baseline, candidate, base_out, base_scores, cand_out, cand_scores, thresholds,
        categories, gate_margin, items,
        sequential.order if sequential is not None else None, unchanged=False,
        suite_size=sequential.suite_size if sequential is not None else None,
        explain=sequential.explain if sequential is not None else True,
    )  # fmt: skip
    # UNCHANGED: the same agent, outputs and scores (an evaluator that scores equal outputs
    # apart is not ignored)
    inputs.unchanged = unchanged(baseline, candidate, base_out, cand_out) and all(
        not inputs.missing(m) and (pair := inputs.paired(m))[0] == pair[1]
        for m in thresholds.gated_metrics
    )
    report = [spec.run(inputs) for spec in checks("gate") if spec.run is not None]
    return GateReport(candidate.run_id, baseline.run_id, True, [], report, notes, inputs)


def _scale_note(thresholds: Thresholds, repeats: int, margin: float,
                base_scores: Sequence[ItemScore]) -> list[str]:  # fmt: skip
    """When repeats are reduced to something else than their mean, what the margin is
    measured on, and what a drop of the margin per answer would be on it."""
    reducer = thresholds.regression.reducer
    scale = margin_scale(reducer, repeats)
    if scale is None:
        return []
    note = (f"the margin {margin:g} is on {scale} (reducer {reducer}), not per answer: a "
            "candidate worse by the margin per answer can pass")  # fmt: skip
    metric, at = thresholds.primary_metric, thresholds.regression.pass_threshold
    answers = [s.value for s in base_scores if s.evaluator == metric and s.value is not None]
    rate = sum(v >= at for v in answers) / len(answers) if answers else None
    drop = per_answer_drop(reducer, repeats, rate, margin) if rate is not None else None
    if drop is not None:
        note += (f"; at the baseline's per-answer pass rate of {metric} ({rate:.2f}), a "
                 f"drop of {margin:g} per answer is {drop:.3f} on this scale")  # fmt: skip
    return [note]


def not_comparable_report(candidate: RunRecord, baseline: RunRecord | None,
                          reason: str) -> GateReport:  # fmt: skip
    """Every gate check errors with the same plain reason."""
    report = [GateCheck(spec.name, "fail", reason) for spec in checks("gate")]
    return GateReport(
        candidate.run_id, baseline.run_id if baseline else None, False, [reason], report
    )
