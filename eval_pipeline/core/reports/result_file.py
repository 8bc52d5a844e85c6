"""The results file (``eval-pipeline run --json``): one run's verdict and its evidence, a
versioned, typed document, and the one view model every surface renders: the CLI report,
Markdown, JUnit, Dagster's check results and the PR comment lay it out; none computes or
rounds a number of its own. Each check and each row says itself (its label, its
description, ``numbers()``; the rows: core/scoring/rows.py), so a renderer loops over them
without asking which kind each is.

``ResultFile.of(result)`` builds it from an ``EvalResult``; ``--json`` writes it;
``docs/result.schema.json`` is its JSON Schema (``python -m
eval_pipeline.core.reports.result_file`` prints it; a test keeps the published file in
step). ``schema_version`` changes when a field is removed or changes meaning; added fields
keep it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_pipeline.core.evaluation import EvalResult, SequentialReport
from eval_pipeline.core.scoring.checks import Label
from eval_pipeline.core.scoring.gate import GateCheck, GateReport
from eval_pipeline.core.scoring.rows import CheckRow, Outcome, WorseItem
from eval_pipeline.core.scoring.summary import Summary
from eval_pipeline.core.store.records import ItemStatus, RunRecord, Verdict, VerdictRecord
from eval_pipeline.core.util.interrupts import INTERRUPTS_FIELD

SCHEMA_VERSION: Literal[2] = 2  # 2: the verdict UNDECIDED (exit 3), the undecided metrics


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CheckResult(_Model):
    """A threshold check: blocking ones FAIL, the others WARN; N/A when it tested nothing."""

    name: str
    result: Label
    passed: bool
    blocking: bool
    description: str
    rows: list[CheckRow] = []

    @property
    def tested(self) -> bool:
        return self.result != "N/A"

    def numbers(self) -> dict[str, Any]:
        """Each row's numbers under labels naming their metric (and category)."""
        numbers = _numbers(self.rows)
        if self.name == "all_items_pass":  # (its rows are the items: their count)
            numbers["items below 1.0"] = len(self.rows)
        return numbers


class GateCheckResult(_Model):
    """One check of the regression gate (paired_gate, binary_gate, category_deltas,
    cost_latency)."""

    name: str
    result: Label
    outcome: Outcome
    tested: bool
    description: str
    rows: list[CheckRow] = []
    worse_items: list[WorseItem] = []
    blocking: bool = True  # its failure fails the run (declared with the check)

    @classmethod
    def of(cls, check: GateCheck) -> GateCheckResult:
        return cls(name=check.name, result=check.label, outcome=check.outcome,
                   tested=check.tested, description=check.description, rows=check.rows,
                   worse_items=check.worse_items, blocking=check.blocking)  # fmt: skip

    @property
    def blocking_failure(self) -> bool:
        return self.outcome == "fail" and self.blocking

    @property
    def undecided(self) -> bool:
        return self.result == "UNDECIDED"

    @property
    def severity(self) -> Label:
        """FAIL / WARN / PASS as the check's failure weighs, or UNDECIDED."""
        if self.undecided:
            return "UNDECIDED"
        if self.outcome == "fail":
            return "FAIL" if self.blocking_failure else "WARN"
        return "PASS" if self.outcome == "pass" else "WARN"

    def numbers(self) -> dict[str, Any]:
        """Δ, CI, p and n per metric (or per category), ratios, each under its own label."""
        return _numbers(self.rows, settled=self.outcome == "pass")


def _numbers(rows: list[CheckRow], *, settled: bool = False) -> dict[str, Any]:
    numbers: dict[str, Any] = {}
    for row in rows:
        numbers |= row.numbers(settled=settled)
    return {k: v for k, v in numbers.items() if v is not None}


class GateResult(_Model):
    """The run against its baseline, item by item (docs/gate.md)."""

    candidate_run_id: str
    baseline_run_id: str | None
    comparable: bool
    problems: list[str]
    outcome: Outcome
    checks: list[GateCheckResult]
    notes: list[str]

    @classmethod
    def of(cls, gate: GateReport) -> GateResult:
        return cls(candidate_run_id=gate.candidate_run_id, baseline_run_id=gate.baseline_run_id,
                   comparable=gate.comparable, problems=gate.problems, outcome=gate.outcome,
                   checks=[GateCheckResult.of(c) for c in gate.checks],
                   notes=gate.notes)  # fmt: skip


class SequentialRun(_Model):
    """How far a sequential run went (``sequential`` says it in one line)."""

    decided: bool
    cases: int  # the cases run
    suite_cases: int
    model_calls: int
    paired: int | None  # the cases the gate paired (None: no gate)
    repeats: int
    paired_line: str | None  # why the gate paired fewer cases than the run measured
    repeats_line: str | None  # the flaky cases repeated, or why none was

    @classmethod
    def of(cls, said: SequentialReport) -> SequentialRun:
        return cls(decided=said.decided, cases=said.cases, suite_cases=said.suite_cases,
                   model_calls=said.model_calls, paired=said.paired, repeats=said.repeats,
                   paired_line=said.paired_line(),
                   repeats_line=said.repeats_line())  # fmt: skip


class ScoreDetail(_Model):
    comment: str | None
    metadata: dict[str, Any] | None


class ItemResult(_Model):
    """One case and repeat: its scores, error, latency, tokens and cost."""

    item_id: str
    repeat: int
    scores: dict[str, float | None]
    score_details: dict[str, ScoreDetail]  # why it scored so: a judge's reasoning, model, …
    status: ItemStatus  # finished, paused (at an interrupt: core/util/interrupts.py), or error
    interrupts: list[dict[str, Any]]  # each {name, value, answer}; no answer: where it paused
    error: str | None
    error_kind: str | None
    fault: str | None  # agent | infrastructure | configuration
    latency_ms: float
    input_tokens: int
    output_tokens: int
    cost_usd: float
    attempts: int
    reused_from: str | None  # the run that produced it, when taken from the memo


class ResultFile(_Model):
    """What ``eval-pipeline run --json FILE`` writes."""

    schema_version: Literal[2] = Field(SCHEMA_VERSION)
    verdict: Verdict
    exit_code: Literal[0, 1, 2, 3]
    errors: list[str]  # why there is no verdict (ERROR)
    undecided: list[str]  # the gated metrics the gate could not decide (UNDECIDED)
    sequential: str | None  # a sequential run: "decided after N of M cases (K model calls)"
    repeated_cases: list[str] = []  # the flaky cases the sequential gate ran more often
    sequential_run: SequentialRun | None = None  # the same, in numbers
    notes: list[str]  # what does not change the verdict
    hint: str | None = None  # the note said with the verdict (the first of ``notes``)
    primary_metric: str | None = None  # the thresholds' primary metric (the worse items')
    run: RunRecord
    summary: Summary
    checks: list[CheckResult]
    gate: GateResult | None
    gate_note: str | None  # why there is no gate
    failed: list[str]  # the checks that failed the run
    warnings: list[str]
    # The verdict as the results store keeps it: its reason, the paired Δ that backs it
    # and interval, after how many cases a sequential gate decided
    conclusion: VerdictRecord
    items: list[ItemResult]

    @classmethod
    def of(cls, result: EvalResult) -> ResultFile:
        checks = [
            CheckResult(
                name=c.name,
                result=c.label,
                passed=c.outcome.passed,
                blocking=c.blocking,
                description=c.outcome.description,
                rows=c.outcome.rows,
            )
            for c in result.checks
        ]
        return cls(
            verdict=result.verdict, exit_code=result.exit_code, errors=result.errors,
            undecided=result.undecided,
            sequential=result.sequential.line() if result.sequential else None,
            repeated_cases=list(result.sequential.repeated) if result.sequential else [],
            sequential_run=SequentialRun.of(result.sequential) if result.sequential else None,
            notes=result.notes, hint=result.hint,
            primary_metric=result.thresholds.primary_metric, run=result.run,
            summary=result.summary, checks=checks,
            gate=GateResult.of(result.gate) if result.gate else None,
            gate_note=result.gate_note, failed=result.failed, warnings=result.warnings,
            conclusion=result.verdict_record(), items=_items(result),
        )  # fmt: skip

    def item_failures(self) -> dict[str, str]:
        """The cases that fail, each with why (a test case per item: JUnit's, the pytest
        plugin's): the agent's error, else a check's row that fails it (all_items_pass),
        else that it got worse than the baseline on the primary metric."""
        failing: dict[str, str] = {}
        for item in self.items:
            if item.error:
                failing[item.item_id] = f"agent error: {item.error}"
        for check in self.checks:
            for row in check.rows:
                if (said := row.item_failure()) is not None:
                    failing.setdefault(*said)
        for gate_check in self.gate.checks if self.gate else []:
            for w in gate_check.worse_items:
                failing.setdefault(w.item_id, f"worse than the baseline: {self.primary_metric} "
                                              f"{w.baseline} → {w.candidate}")  # fmt: skip
        return failing


def _items(result: EvalResult) -> list[ItemResult]:
    scores: dict[tuple[str, int], dict[str, float | None]] = {}
    details: dict[tuple[str, int], dict[str, ScoreDetail]] = {}
    for s in result.scores:
        scores.setdefault((s.item_id, s.repeat), {})[s.evaluator] = s.value
        if s.comment or s.metadata:
            details.setdefault((s.item_id, s.repeat), {})[s.evaluator] = ScoreDetail(
                comment=s.comment, metadata=s.metadata
            )
    return [
        ItemResult(
            item_id=o.item_id,
            repeat=o.repeat,
            scores=scores.get((o.item_id, o.repeat), {}),
            score_details=details.get((o.item_id, o.repeat), {}),
            status=o.status,
            interrupts=list((o.output or {}).get(INTERRUPTS_FIELD) or []),
            error=o.error,
            error_kind=o.error_kind,
            fault=o.fault,
            latency_ms=round(o.latency_ms, 1),
            input_tokens=o.input_tokens,
            output_tokens=o.output_tokens,
            cost_usd=o.cost_usd,
            attempts=o.attempts,
            reused_from=o.source_run_id,
        )
        for o in result.outputs
    ]


def json_schema() -> str:
    """The results file's JSON Schema, as published in docs/result.schema.json."""
    schema = ResultFile.model_json_schema(mode="serialization")
    schema["$id"] = f"eval-pipeline/result/v{SCHEMA_VERSION}"
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(json_schema(), end="")
