"""Production failures, run again with a candidate: did it fix yesterday's failures?

A sampled production trace is a failure when a reference-free evaluator scored it below
1.0, or when the user corrected the order (``metadata.user_feedback.corrected_items``).
Each becomes a case: the trace's input, teacher-forced (for a conversation, the customer's
turns up to the end of the trace), with the trace id kept in its metadata for lineage.
The candidate runs on them as a run of the results store (``rerun_failures``: the run
service's plan and produce, so the memo, the stored outputs and the agent's tracing are
those of any run; its tier is "failures"); a failure is *fixed* when every evaluator that
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
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.scoring.apply import Evaluator, evaluate_one
from eval_pipeline.core.scoring.summary import summarize
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunStatus
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import GoldenCase
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


def score_rerun(
    cases: Sequence[GoldenCase],
    outputs: Sequence[ItemOutput],
    trace_evaluators: Sequence[Evaluator],
    primary: Evaluator | None,
) -> tuple[RerunReport, list[ItemScore]]:
    """Score each output of the rerun with the evaluators its trace failed (the primary metric
    against the user's correction) and say which failures are fixed."""
    by_name: Mapping[str, Evaluator] = {evaluator_name(f): f for f in trace_evaluators}
    rows, scores = [], []
    for case, out in zip(cases, outputs, strict=True):
        trace_id, failed = lineage(case)
        meta = {
            "latency_ms": out.latency_ms,
            "cost_usd": out.cost_usd,
            "level": "ERROR" if out.error else "DEFAULT",
            "status_message": out.error,
        }
        still: list[str] = []
        for name in failed:
            fn = primary if name == CORRECTION else by_name.get(name)
            if fn is None:
                continue
            for score in evaluate_one(fn, item_id=case.id, repeat=0, input=case.input,
                                      output=out.output, expected_output=case.expected_output,
                                      metadata=meta):  # fmt: skip
                scores.append(score)
                if score.value is None or score.value < 1.0:
                    still.append(name)
        rows.append(RerunRow(trace_id, case.id, failed,
                              tuple(dict.fromkeys(still)), out.error))  # fmt: skip
    return RerunReport(tuple(rows)), scores


def rerun_failures(
    store: ResultsStore,
    plan_: evaluation.RunPlan,
    agent: Agent,
    primary: Evaluator | None,
    *,
    prices: PriceTable | None = None,
) -> RerunReport:
    """Run the agent on a plan of failure cases (``evaluation.plan(cases=…)``) as a stored
    run: outputs from the memo where the same version already ran them; then the rerun's
    scores, and the run completes."""
    run_id = plan_.run.run_id
    store.create_run(plan_.run)
    produced = {o.item_id: o for o in evaluation.produce(store, plan_, agent, prices=prices)}
    outputs = [produced[c.id] for c in plan_.cases]
    with evaluation.failure_recorded(store, run_id):
        report, scores = score_rerun(plan_.cases, outputs, plan_.suite.trace_evaluators, primary)
        store.write_scores(run_id, scores)
        store.write_summary(run_id, summarize(plan_.cases, outputs, scores))
        store.settle_run(run_id, RunStatus.COMPLETE)
    return report
