"""Production failures, run again with a candidate: did it fix yesterday's failures?

A sampled production trace is a failure when a reference-free evaluator scored it below
1.0, or when the user corrected the order (``metadata.user_feedback.corrected_items``).
Each becomes a case: the trace's input, teacher-forced (for a conversation, the customer's
turns up to the end of the trace), with the trace id kept in its metadata for lineage.
The candidate runs on them as a run of the results store, a kind of run request the run
service sequences like any other (``RunRequest.failures``: service/run.py; so the memo, the
stored outputs and the agent's tracing are those of any run; its tier is "failures"): its
score step is ``score_failures``, what follows it ``conclude_failures`` (a summary, no
verdict), its write-back the lineage scores. A failure is *fixed* when every evaluator that
failed in production now scores 1.0 and, with a user correction, the primary metric scores
1.0 against the corrected order.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from eval_pipeline.core import evaluation
from eval_pipeline.core.scoring.apply import Evaluator, evaluate_one
from eval_pipeline.core.scoring.summary import summarize
from eval_pipeline.core.store.records import ItemOutput, ItemScore
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.core.traces.observations import TraceRecord
from eval_pipeline.core.util import safe_yaml
from eval_pipeline.evaluators.declare import evaluator_name

CORRECTION = "corrected"  # the "failed evaluator" of a trace the user corrected


def failed_evaluators(scores: Sequence[ItemScore]) -> dict[str, list[str]]:
    """trace id → the evaluators that scored it below 1.0."""
    failed: dict[str, list[str]] = {}
    for s in scores:
        if s.value is not None and s.value < 1.0:
            failed.setdefault(s.item_id, []).append(s.evaluator)
    return failed


def failure_cases(
    records: Sequence[TraceRecord], scores: Sequence[ItemScore], day: date
) -> list[GoldenCase]:
    """One teacher-forced case per failed or corrected trace, in trace order."""
    failed = failed_evaluators(scores)
    cases = []
    for record in records:
        corrected = (record.metadata.get("user_feedback") or {}).get("corrected_items")
        reasons = sorted(failed.get(record.trace_id, [])) + ([CORRECTION] if corrected else [])
        if not reasons:
            continue
        cases.append(GoldenCase(
            id=f"failure-{record.trace_id}"[:128],
            input=_teacher_forced(record),
            expected_output={"expected_items": corrected} if corrected else None,
            metadata={"category": str(record.metadata.get("category") or "production"),
                      "difficulty": "medium", "tier": "full", "trace_id": record.trace_id,
                      "day": day.isoformat(), "failed": reasons},
        ))  # fmt: skip
    return cases


def lineage(case: GoldenCase) -> tuple[str, tuple[str, ...]]:
    """The production trace a failure case came from, and what it failed there."""
    extra = case.metadata.model_extra or {}
    return str(extra["trace_id"]), tuple(extra.get("failed") or ())


def _teacher_forced(record: TraceRecord) -> dict[str, Any]:
    """The trace's input; a multi-turn trace gives its customer turns again, on one thread."""
    messages = (record.output or {}).get("messages") if isinstance(record.output, dict) else None
    said = [m.get("content") for m in messages or [] if isinstance(m, dict)
            and m.get("role") == "user" and isinstance(m.get("content"), str)]  # fmt: skip
    if len(said) > 1:
        return {"conversation": {"turns": said}}
    if isinstance(record.input, dict):
        return record.input
    return {"message": str(record.input)}


def write_failures(path: Path, suite: str, cases: Sequence[GoldenCase]) -> Path:
    """The day's failures as a cases file (atomically: a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"suite": suite, "cases": [c.model_dump(mode="json") for c in cases]}
    handle, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as f:
        yaml.safe_dump(body, f, sort_keys=False, allow_unicode=True)
    os.replace(tmp, path)
    return path


def latest_failures(folder: Path) -> tuple[Path | None, list[GoldenCase]]:
    """The newest day's failures file in ``folder`` (``<day>.yaml``) and its cases."""
    files = sorted(folder.glob("????-??-??.yaml")) if folder.is_dir() else []
    if not files:
        return None, []
    raw = safe_yaml.load(files[-1].read_text(encoding="utf-8")) or {}
    return files[-1], [GoldenCase.model_validate(c) for c in raw.get("cases") or []]


@dataclass(frozen=True)
class RerunRow:
    trace_id: str
    case_id: str
    failed_in_production: tuple[str, ...]
    still_failing: tuple[str, ...]  # empty: fixed
    error: str | None = None

    @property
    def fixed(self) -> bool:
        return not self.still_failing and self.error is None


@dataclass(frozen=True)
class RerunReport:
    rows: tuple[RerunRow, ...]

    @property
    def fixed(self) -> int:
        return sum(r.fixed for r in self.rows)

    @property
    def still_failing(self) -> int:
        return len(self.rows) - self.fixed

    def line(self) -> str:
        return (f"fixes {self.fixed} of {len(self.rows)} production failures, "
                f"{self.still_failing} still fail")  # fmt: skip


FAILED_IN_PRODUCTION = "failed_in_production"  # a rerun score's metadata: which failure it tests


def primary_of(suite: Suite) -> Evaluator | None:
    """The suite's primary metric, which scores a user's correction."""
    return next((f for f in suite.evaluators
                 if evaluator_name(f) == suite.thresholds.primary_metric), None)  # fmt: skip


def rerun_scores(
    cases: Sequence[GoldenCase],
    outputs: Sequence[ItemOutput],
    trace_evaluators: Sequence[Evaluator],
    primary: Evaluator | None,
) -> list[ItemScore]:
    """Score each output of the rerun with the evaluators its trace failed (the primary
    metric against the user's correction); each score names the failure it tests
    (``metadata.failed_in_production``), so ``rerun_report`` reads the report off them."""
    by_name: Mapping[str, Evaluator] = {evaluator_name(f): f for f in trace_evaluators}
    scores = []
    for case, out in zip(cases, outputs, strict=True):
        meta = {
            "latency_ms": out.latency_ms,
            "cost_usd": out.cost_usd,
            "level": "ERROR" if out.error else "DEFAULT",
            "status_message": out.error,
        }
        for name in lineage(case)[1]:
            fn = primary if name == CORRECTION else by_name.get(name)
            if fn is None:
                continue
            for score in evaluate_one(fn, item_id=case.id, repeat=0, input=case.input,
                                      output=out.output, expected_output=case.expected_output,
                                      metadata=meta):  # fmt: skip
                score.metadata = {**(score.metadata or {}), FAILED_IN_PRODUCTION: name}
                scores.append(score)
    return scores


def rerun_report(
    cases: Sequence[GoldenCase], outputs: Sequence[ItemOutput], scores: Sequence[ItemScore]
) -> RerunReport:
    """Which failures the rerun fixed: a failure still fails while a score testing it
    (``rerun_scores``) is below 1.0 or missing its value."""
    failing = {(s.item_id, (s.metadata or {}).get(FAILED_IN_PRODUCTION)) for s in scores
               if s.value is None or s.value < 1.0}  # fmt: skip
    errors = {o.item_id: o.error for o in outputs}
    rows = []
    for case in cases:
        trace_id, failed = lineage(case)
        still = tuple(name for name in failed if (case.id, name) in failing)
        rows.append(RerunRow(trace_id, case.id, failed, still, errors.get(case.id)))
    return RerunReport(tuple(rows))


def score_rerun(
    cases: Sequence[GoldenCase],
    outputs: Sequence[ItemOutput],
    trace_evaluators: Sequence[Evaluator],
    primary: Evaluator | None,
) -> tuple[RerunReport, list[ItemScore]]:
    """The rerun's scores (``rerun_scores``) and which failures are fixed."""
    scores = rerun_scores(cases, outputs, trace_evaluators, primary)
    return rerun_report(cases, outputs, scores), scores


def score_failures(
    store: ResultsStore, run_id: str, cases: Sequence[GoldenCase], suite: Suite
) -> list[ItemScore]:
    """The score step of a run on production failures (service/run.py ``score``): each
    stored output scored with the evaluators its trace failed, the scores stored."""
    with evaluation.failure_recorded(store, run_id):
        produced = {o.item_id: o for o in store.read_outputs(run_id)}
        outputs = [produced[c.id] for c in cases]
        scores = rerun_scores(cases, outputs, suite.trace_evaluators, primary_of(suite))
        store.write_scores(run_id, scores)
    return scores


def conclude_failures(store: ResultsStore, plan_: evaluation.RunPlan,
                      cases: Sequence[GoldenCase]) -> evaluation.EvalResult:  # fmt: skip
    """What follows scoring for a run on production failures (service/run.py
    ``conclude``): its summary, and no verdict (no gate or threshold judges a rerun; its
    report is ``rerun_report``)."""
    run_id = plan_.run.run_id
    with evaluation.failure_recorded(store, run_id):
        produced = {o.item_id: o for o in store.read_outputs(run_id)}
        outputs, scores = [produced[c.id] for c in cases], store.read_scores(run_id)
        summary = summarize(cases, outputs, scores)
        store.write_summary(run_id, summary)
    return evaluation.EvalResult(store.get_run(run_id) or plan_.run, summary, [],
                                 plan_.suite.thresholds, outputs, scores, cases=list(cases),
                                 gate_note=NOT_GATED)  # fmt: skip


NOT_GATED = "a run on production failures is never gated"


def lineage_scores(report: RerunReport, version: str) -> list[ItemScore]:
    """Onto each original trace: whether ``version`` fixes it (``rerun_fixed_<version>``)."""
    return [ItemScore(r.trace_id, 0, f"rerun_fixed_{version}", float(r.fixed),
                      _comment(r, version)) for r in report.rows]  # fmt: skip


def _comment(row: RerunRow, version: str) -> str:
    if row.fixed:
        return f"{version} fixes it (failed in production: {', '.join(row.failed_in_production)})"
    why = row.error or ", ".join(row.still_failing)
    return f"{version} still fails: {why}"
