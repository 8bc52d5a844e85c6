"""Production failures, replayed against a candidate: did it fix yesterday's failures?

A sampled production trace is a failure when a reference-free evaluator scored it below
1.0, or when the user corrected the order (``metadata.user_feedback.corrected_items``).
Each becomes a case: the trace's input, teacher-forced (for a conversation, the customer's
turns up to the end of the trace), with the trace id kept in its metadata for lineage.
The candidate runs on them; a failure is *fixed* when every evaluator that failed in
production now scores 1.0 and, with a user correction, the primary metric scores 1.0
against the corrected order.
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

from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.scoring.apply import Evaluator, evaluate_one
from eval_pipeline.core.store.records import ItemOutput, ItemScore
from eval_pipeline.core.traces.records import TraceRecord
from eval_pipeline.evaluators.base import evaluator_name

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
            id=f"replay-{record.trace_id}"[:128],
            input=_teacher_forced(record),
            expected_output={"expected_items": corrected} if corrected else None,
            metadata={"category": str(record.metadata.get("category") or "production"),
                      "difficulty": "medium", "tier": "full", "trace_id": record.trace_id,
                      "day": day.isoformat(), "failed": reasons},
        ))  # fmt: skip
    return cases


def lineage(case: GoldenCase) -> tuple[str, tuple[str, ...]]:
    """The production trace a replay case came from, and what it failed there."""
    extra = case.metadata.model_extra or {}
    return str(extra["trace_id"]), tuple(extra.get("failed") or ())


def _teacher_forced(record: TraceRecord) -> dict[str, Any]:
    """The trace's input; a multi-turn trace replays its customer turns on one thread."""
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
    raw = yaml.safe_load(files[-1].read_text(encoding="utf-8")) or {}
    return files[-1], [GoldenCase.model_validate(c) for c in raw.get("cases") or []]


@dataclass(frozen=True)
class ReplayRow:
    trace_id: str
    case_id: str
    failed_in_production: tuple[str, ...]
    still_failing: tuple[str, ...]  # empty: fixed
    error: str | None = None

    @property
    def fixed(self) -> bool:
        return not self.still_failing and self.error is None


@dataclass(frozen=True)
class ReplayReport:
    rows: tuple[ReplayRow, ...]

    @property
    def fixed(self) -> int:
        return sum(r.fixed for r in self.rows)

    @property
    def still_failing(self) -> int:
        return len(self.rows) - self.fixed

    def line(self) -> str:
        return (f"fixes {self.fixed} of {len(self.rows)} production failures, "
                f"{self.still_failing} still fail")  # fmt: skip


def judge_replay(
    cases: Sequence[GoldenCase],
    outputs: Sequence[ItemOutput],
    trace_evaluators: Sequence[Evaluator],
    primary: Evaluator | None,
) -> tuple[ReplayReport, list[ItemScore]]:
    """Score each replayed output with the evaluators its trace failed (the primary metric
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
        rows.append(ReplayRow(trace_id, case.id, failed,
                              tuple(dict.fromkeys(still)), out.error))  # fmt: skip
    return ReplayReport(tuple(rows)), scores
