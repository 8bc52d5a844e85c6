"""The outcome of one run: what it scored, which checks failed, the gate's evidence, and
the verdict every driver reports (PASS, FAIL, UNDECIDED, ERROR)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval_pipeline.core.errors import ExitCode
from eval_pipeline.core.options import OnUndecided
from eval_pipeline.core.running.failures import NOT_THE_AGENT
from eval_pipeline.core.scoring import gate as gating
from eval_pipeline.core.scoring.checks import ThresholdCheck, spec
from eval_pipeline.core.scoring.reducers import margin_scale
from eval_pipeline.core.scoring.rows import BinaryRow, PairedRow, backing_row
from eval_pipeline.core.scoring.summary import Summary
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.records import (
    ItemOutput,
    ItemScore,
    RunRecord,
    Verdict,
    VerdictRecord,
)
from eval_pipeline.core.suites.cases import GoldenCase


@dataclass(frozen=True)
class SequentialReport:
    """How far a sequential run went: decided (or not) after ``cases`` of the suite's."""

    cases: int
    suite_cases: int
    decided: bool
    model_calls: int
    repeated: tuple[str, ...] = ()  # flaky cases run more often, up to ``repeats`` (``Repeats``)
    repeats: int = 1
    repeats_note: str = ""  # why no case was repeated, when none could be
    # the gate's pairs: the cases in draw order up to the first the run has not run
    # (core/evaluation/plan.py ``drawn_prefix``); None: not known (no gate)
    paired: int | None = None

    def line(self) -> str:
        said = "decided" if self.decided else "undecided"
        flaky = ""
        if self.repeated:
            flaky = f", {len(self.repeated)} flaky ones up to {self.repeats} times each"
        paired = f", {self.paired} of them paired" if self.fewer_paired else ""
        return (f"{said} after {self.cases} of {self.suite_cases} cases{paired}{flaky} "
                f"({self.model_calls} model calls)")  # fmt: skip

    @property
    def fewer_paired(self) -> bool:
        """The gate paired fewer of the run's cases than it ran (a tier's cases the draw
        has not reached yet)."""
        return self.paired is not None and self.paired < self.cases

    def paired_line(self) -> str | None:
        """Why the gate paired fewer cases than the run measured, when it did."""
        if not self.fewer_paired:
            return None
        return (f"the gate paired {self.paired} of the {self.cases} cases run: the suite's "
                "cases in its seeded draw order, up to the first this run has not run (a "
                "tier's cases count only where the draw reaches them, so a tier tuned on "
                "cannot carry the decision)")  # fmt: skip

    def repeats_line(self, shown: int = 10) -> str | None:
        """The flaky cases it repeated, named; or, when it stayed undecided, why none."""
        if self.repeated:
            more = f" and {len(self.repeated) - shown} more" if len(self.repeated) > shown else ""
            return (f"flaky in the baseline, run up to {self.repeats} times each: "
                    f"{', '.join(self.repeated[:shown])}{more}")  # fmt: skip
        if not self.decided and self.repeats_note:
            return f"no case repeated: {self.repeats_note}"
        return None


@dataclass
class EvalResult:
    """The outcome of one run: what it scored, which checks failed, the gate's evidence."""

    run: RunRecord
    summary: Summary
    checks: list[ThresholdCheck]
    thresholds: Thresholds
    outputs: Sequence[ItemOutput]
    scores: Sequence[ItemScore]
    gate: gating.GateReport | None = None
    gate_note: str | None = None  # why there is no gate (no baseline, not requested)
    warnings: list[str] = field(default_factory=list)
    charts: dict[str, Path] = field(default_factory=dict)
    cases: Sequence[GoldenCase] = ()  # the run's cases (the tier's)
    problems: list[str] = field(default_factory=list)  # found by the caller (a recording)
    sequential: SequentialReport | None = None  # a sequential run: how far it went
    langfuse: str | None = None  # what went to Langfuse, and where its experiment is

    @property
    def failed(self) -> list[str]:
        names = [c.name for c in self.checks if c.blocking and not c.outcome.passed]
        if self.gate is not None:
            names += [c.name for c in self.gate.checks if c.blocking_failure]
        if self.agent_failure:
            names.append("agent_errors")
        return names

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    @property
    def undecided(self) -> list[str]:
        """The gated metrics the gate could not decide, each with what would decide it
        (empty when every gated metric was decided, or there is no gate)."""
        metrics = [
            f"{row.metric}: {row.note or f'Δ {row.delta:+.3f} is within reach of the margin'}"
            for row in self.undecided_rows
        ]
        checks = [c for c in self.gate.checks if c.undecided] if self.gate else []
        metrics += [f"{row.metric}: {row.newly_failing} newly failing, {row.newly_passing} "
                    f"newly passing (p={row.p_holm:.3g} Holm): not significant"
                    for check in checks for row in check.rows
                    if isinstance(row, BinaryRow) and row.outcome == "warn"]  # fmt: skip
        if not self.run.stopped:
            return metrics
        if metrics or self.sequential is None or self.gate is None:
            # only the sequential gate's decisions hold on the cases a budget let run
            return [*metrics, f"the budget stopped the run: {self.run.stopped}"]
        return []

    @property
    def undecided_rows(self) -> list[PairedRow]:
        """The paired gate's rows of the gated metrics it could not decide."""
        checks = [c for c in self.gate.checks if c.undecided] if self.gate else []
        return [row for check in checks for row in check.rows
                if isinstance(row, PairedRow) and row.outcome == "warn"]  # fmt: skip

    @property
    def verdict(self) -> Verdict:
        """What the run says about the agent (see ``Verdict`` and ``exit_code``)."""
        if self.errors:
            return Verdict.ERROR
        if self.failed:
            return Verdict.FAIL
        return Verdict.UNDECIDED if self.undecided else Verdict.PASS

    @property
    def gate_verdict(self) -> Verdict | None:
        """What the regression gate alone says, in the verdict's words (None: no gate):
        ERROR (it cannot compare the runs, or scores it lacks could change it), FAIL (a
        blocking gate check failed), UNDECIDED (it could not tell), else PASS. A run that
        FAILs on a threshold may have an UNDECIDED gate; a warning check passes."""
        gate = self.gate
        if gate is None:
            return None
        if gate.problems or any(c.errors for c in gate.checks):
            return Verdict.ERROR
        if any(c.blocking_failure for c in gate.checks):
            return Verdict.FAIL
        return Verdict.UNDECIDED if self.undecided else Verdict.PASS

    @property
    def reason(self) -> str:
        """Why the verdict is what it is: the first error (ERROR), the failed checks (FAIL),
        the undecided metrics (UNDECIDED); for PASS what it does not back: that nothing
        was gated, or the scale the margin was on when it is not per answer (else "")."""
        if self.errors:
            return self.errors[0]
        if self.failed:
            return ", ".join(self.failed)
        if self.undecided:
            return "; ".join(self.undecided)
        if self.ungated:
            return self.ungated
        scale = self.margin_scale
        return f"not worse by the margin on {scale}, not per answer" if scale else ""

    @property
    def ungated(self) -> str | None:
        """Why nothing blocked this run, when no blocking check tested anything (no
        blocking threshold, and no baseline to gate against): such a run is a PASS, so a
        suite's first run can become its baseline, and says so; None when anything was
        gated. (The agent at 0% with only warning floors and no baseline read a bare
        "VERDICT: PASS".)"""
        if any(c.blocking and c.outcome.tested and not _of_dataset(c.name) for c in self.checks):
            return None
        gate = self.gate.checks if self.gate is not None else []
        if any(c.tested and (s := spec(c.name)) is not None and s.blocking for c in gate):
            return None
        why = self.gate_note or "no regression gate"
        return f"nothing was gated ({why}; no blocking threshold is set)"

    def verdict_record(self) -> VerdictRecord:
        """The verdict as the results store keeps it, with the paired Δ and interval of the
        metric that backs it (rows.py ``backing_row``, over the gate's metrics, not its
        categories)."""
        primary = self.thresholds.primary_metric
        rows = [r for c in (self.gate.checks if self.gate else ()) for r in c.rows
                if isinstance(r, PairedRow) and r.category is None]  # fmt: skip
        undecided = [r for r in self.undecided_rows if r.category is None]
        row = backing_row(rows, undecided, primary)
        return VerdictRecord(
            run_id=self.run.run_id, verdict=self.verdict, reason=self.reason,
            metric=row.metric if row else None, delta=row.delta if row else None,
            ci_low=row.ci_low if row else None, ci_high=row.ci_high if row else None,
            baseline_run_id=self.gate.baseline_run_id if self.gate else None,
            decided_after=self.sequential.line() if self.sequential else None,
        )  # fmt: skip

    @property
    def on_undecided(self) -> OnUndecided:
        return self.run.options.on_undecided

    @property
    def exit_code(self) -> ExitCode:
        """0 PASS, 1 FAIL (the agent got worse or is below a floor), 2 ERROR, 3 UNDECIDED
        (0 when the run's ``on_undecided`` is ``warn``)."""
        undecided = ExitCode.UNDECIDED if self.on_undecided == "fail" else ExitCode.PASS
        codes = {Verdict.PASS: ExitCode.PASS, Verdict.FAIL: ExitCode.FAIL,
                 Verdict.ERROR: ExitCode.ERROR, Verdict.UNDECIDED: undecided}  # fmt: skip
        return codes[self.verdict]

    @property
    def errors(self) -> list[str]:
        """Why this run cannot say whether the agent got worse (the verdict is ERROR):
        items it could not measure, scores of a deciding metric an evaluator could not
        give, a baseline it cannot be compared with, missing scores that could change the
        gate's decision, and the caller's problems. Never a pass."""
        deciding = self.thresholds.deciding_metrics
        gate = []
        if self.gate is not None:
            gate = [*self.gate.problems, *(e for c in self.gate.checks for e in c.errors)]
        return [*self.problems, *unmeasured(self.outputs),
                *unscored([s for s in self.scores if s.evaluator in deciding]), *gate]  # fmt: skip

    @property
    def notes(self) -> list[str]:
        """What the reader should know that does not change the verdict: a model that
        never called the tools it was offered, why the run may never be a baseline (once
        it settled), scores of other metrics that could not be given."""
        deciding = self.thresholds.deciding_metrics
        said = [n for n in (self.hint, self.run.not_baseline) if n]
        return [*said, *unscored([s for s in self.scores if s.evaluator not in deciding])]

    @property
    def hint(self) -> str | None:
        """Said with the verdict: the agent's model was offered tools in many calls and
        never called one (an endpoint that ignores tools, not a prompt that got worse)."""
        offered, answered = self.summary.calls_with_tools, self.summary.tool_call_answers
        invalid = self.summary.invalid_tool_calls
        if invalid:
            return (f"{invalid} of {offered} model calls with tools returned tool calls whose "
                    "arguments are not valid JSON: the model wrote them (a weaker model or "
                    "a prompt that confuses it), not an endpoint that ignores tools")  # fmt: skip
        if offered < 3 or answered:
            return None
        return (
            f"{answered} of {offered} model calls with tools returned a tool call: the "
            "endpoint may ignore tools; see `eval-pipeline doctor` / EVAL_LLM_COMPAT"
        )

    @property
    def margin_scale(self) -> str | None:
        """What the gate's margin measured when it reduced repeats to something else than
        their mean (reducers.margin_scale); None when per answer, or without a gate."""
        if self.gate is None or not self.gate.comparable:
            return None
        return margin_scale(self.thresholds.regression.reducer, self.run.repeats)

    @property
    def agent_failure(self) -> str | None:
        """Most items failed with the agent's own errors (it looped, it raised): a broken
        agent, which no threshold may pass; None otherwise."""
        failed = [o for o in self.outputs if o.error and o.fault == "agent"]
        items = len(self.outputs)
        if items == 0 or len(failed) * 2 <= items:
            return None
        return f"{len(failed)} of {items} items failed with the agent's own errors " \
               f"({_kinds(failed)})"  # fmt: skip


def unmeasured(outputs: Sequence[ItemOutput]) -> list[str]:
    """The run's items that say nothing about the agent (failures outside it:
    infrastructure, configuration; core/running/failures.py): the kinds, the first one."""
    items = [o for o in outputs if o.error and o.fault in NOT_THE_AGENT]
    if not items:
        return []
    misses = [o for o in items if o.error_kind in ("replay miss", "escaped call")]
    what = "made requests the recordings cannot answer" if len(misses) == len(items) \
        else "failed for reasons outside the agent"  # fmt: skip
    return [f"{len(items)} of {len(outputs)} items {what} ({_kinds(items)}); first, "
            f"{items[0].item_id}: {items[0].error}"]  # fmt: skip


def unscored(scores: Sequence[ItemScore]) -> list[str]:
    """Scores an evaluator could not give, by evaluator and kind, with the first reason."""
    failed = [s for s in scores if s.error_kind]
    if not failed:
        return []
    return [f"{len(failed)} scores could not be given ({_kinds(failed)}); first, "
            f"{failed[0].item_id}: {failed[0].comment}"]  # fmt: skip


def _kinds(failed: Sequence[ItemOutput | ItemScore]) -> str:
    """ "kind ×n, …", the most frequent first (a score's kind is named by its evaluator)."""
    counts: dict[str, int] = {}
    for f in failed:
        kind = f.error_kind or "error"
        if isinstance(f, ItemScore):
            kind = f"{f.evaluator}: {kind}"
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{kind} ×{n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _of_dataset(check: str) -> bool:
    """The check tests the suite's cases, not the agent (absence_coverage)."""
    declared = spec(check)
    return declared is not None and declared.of_dataset
