"""Bisection: which version (or commit) first made the agent worse, each step a decision
of the sequential gate against one baseline run of the good version.

The search is ``git bisect``'s: the good end is the baseline, the bad end is checked
first (it must be worse), then the midpoint of what remains, until one candidate is
left. A step's judgement is the regression gate's, never a single run's score: WORSE
(the gate failed: the agent got worse than the good version by more than the margin, or
most items failed with the agent's own errors), NOT WORSE (it decided the agent did not
get worse; UNCHANGED included), UNDECIDED (the suite ran out before the gate could tell)
or ERROR. An undecided step stops the search and says which range is still open: a
bisection that guessed there would follow noise.

The drivers (prompt versions in this process, commits in worktrees) are in
eval_pipeline/cli/bisect.py; this module is the search and what it reports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from eval_pipeline.core.errors import ExitCode
from eval_pipeline.core.reports.result_file import ResultFile
from eval_pipeline.core.scoring import checks
from eval_pipeline.core.scoring.rows import PairedRow
from eval_pipeline.core.store.records import Verdict

Judgement = Literal["BASELINE", "WORSE", "NOT WORSE", "UNDECIDED", "ERROR"]
Outcome = Literal["found", "not worse", "undecided", "error"]
EXIT_CODES: dict[Outcome, ExitCode] = {
    "found": ExitCode.PASS,
    "not worse": ExitCode.ERROR,
    "error": ExitCode.ERROR,
    "undecided": ExitCode.UNDECIDED,
}
STOPPED: dict[Judgement, Outcome] = {"NOT WORSE": "not worse", "UNDECIDED": "undecided"}


@dataclass(frozen=True)
class Step:
    """One evaluation of a candidate: the gate's judgement against the good version."""

    name: str  # "version 4", "commit 1a2b3c4 (subject)"
    judgement: Judgement
    run_id: str
    sequential: str  # "decided after N of M cases (K model calls)", "" for the baseline
    evidence: str  # the gate's numbers (metric Δ, confidence bounds, n), or why ERROR
    model_calls: int
    notes: tuple[str, ...] = ()  # what does not change the judgement (own thresholds)

    def line(self) -> str:
        run = f" (run {self.run_id})" if self.run_id else ""
        seq = f" — {self.sequential}" if self.sequential else ""
        notes = "".join(f"; {n}" for n in self.notes)
        return f"{self.name}: {self.judgement}{seq}; {self.evidence}{notes}{run}"


def judge(result: ResultFile) -> tuple[Judgement, str, tuple[str, ...]]:
    """A step's judgement from its run's result: the regression gate's, with its
    evidence, and the run's own failed thresholds as a note (they do not decide a step:
    the good version may be below them too)."""
    if result.verdict is Verdict.ERROR:
        return "ERROR", result.errors[0] if result.errors else "the run has no verdict", ()
    gate = result.gate
    if gate is None:
        return "ERROR", f"no gate: {result.gate_note or 'no baseline'}", ()
    if not gate.comparable:
        return "ERROR", "; ".join(gate.problems) or "not comparable with the baseline", ()
    checks = [c.name for c in result.checks]
    own = tuple(f"own thresholds failed: {n}" for n in result.failed if n in checks)
    failed = [c for c in gate.checks if c.outcome == "fail" and _blocks(c.name)]
    paired = [r for c in gate.checks if c.name == "paired_gate" for r in c.rows
              if isinstance(r, PairedRow)]  # fmt: skip
    evidence = "; ".join(_paired(r) for r in paired) or "no paired rows"
    evidence += "".join(f"; {c.name}: {c.description}" for c in failed if c.name != "paired_gate")
    if failed or "agent_errors" in result.failed:
        if "agent_errors" in result.failed:
            evidence += "; most items failed with the agent's own errors"
        return "WORSE", evidence, own
    if result.undecided:
        return "UNDECIDED", evidence, own
    return "NOT WORSE", evidence, own


def _blocks(name: str) -> bool:
    declared = checks.spec(name)
    return declared is None or declared.blocking


def _paired(row: PairedRow) -> str:
    bounds = "" if row.ci_low is None or row.ci_high is None else \
        f", bounds [{row.ci_low:+.3f}, {row.ci_high:+.3f}]"  # fmt: skip
    return f"{row.metric} Δ {row.delta:+.3f}{bounds}, n={row.n}"


def baseline_of(name: str, result: ResultFile, model_calls: int) -> Step:
    """The good end's run, the baseline of every step: usable unless it has no verdict
    (its own thresholds or gate may fail: it is still what the others are compared with)."""
    if result.verdict is Verdict.ERROR:
        why = result.errors[0] if result.errors else "the run has no verdict"
        return Step(name, "ERROR", result.run.run_id, "", why, model_calls)
    summary = result.summary
    means = ", ".join(f"{m} {v:.3f}" for m, v in summary.metrics.items() if v is not None)
    evidence = f"{summary.n_cases} cases, {result.run.tier} tier: {means or 'no metrics'}"
    return Step(name, "BASELINE", result.run.run_id, "", evidence, model_calls)


def failed_step(name: str, why: str) -> Step:
    """A candidate that could not be evaluated (its setup failed, its run crashed)."""
    return Step(name, "ERROR", "", "", why, 0)


def step_of(name: str, result: ResultFile, model_calls: int) -> Step:
    judgement, evidence, notes = judge(result)
    return Step(name, judgement, result.run.run_id, result.sequential or "", evidence,
                model_calls, notes)  # fmt: skip


@dataclass
class Bisection:
    """What a bisection found: ``candidates[good]`` the last version the gate found not
    worse than the first, ``candidates[bad]`` the first it found worse; with ``outcome``
    "found", they are next to each other."""

    candidates: Sequence[str]  # in order: the good end first, the bad end last
    baseline: Step  # the good end's run, every step's baseline
    steps: list[Step] = field(default_factory=list)
    good: int = 0
    bad: int = -1  # set to the bad end's index when the search starts
    outcome: Outcome = "found"

    @property
    def exit_code(self) -> ExitCode:
        return EXIT_CODES[self.outcome]

    @property
    def first_bad(self) -> str | None:
        return self.candidates[self.bad] if self.outcome == "found" else None

    @property
    def model_calls(self) -> int:
        return self.baseline.model_calls + sum(s.model_calls for s in self.steps)

    def step_at(self, index: int) -> Step | None:
        """The step that evaluated ``candidates[index]`` (None: not evaluated)."""
        name = self.candidates[index]
        return next((s for s in self.steps if s.name == name), None)

    def final_line(self) -> str:
        steps = f"{len(self.steps)} step{'s' if len(self.steps) != 1 else ''}"
        calls = f"{self.model_calls} model calls spent ({steps} and the baseline)"
        first, last = self.candidates[0], self.candidates[-1]
        good = self.candidates[self.good]
        if self.outcome == "found":
            step = self.step_at(self.bad)
            evidence = step.evidence if step else ""
            return (f"first bad: {self.candidates[self.bad]} (last good: {good}) — worse than "
                    f"{first}: {evidence}; {calls}")  # fmt: skip
        stopped = self.steps[-1] if self.steps else self.baseline
        if self.outcome == "not worse":  # (the bad end, checked first)
            return (f"nothing to bisect: {last} is not worse than {first} "
                    f"({stopped.evidence}); {calls}")  # fmt: skip
        bad_end = self.step_at(len(self.candidates) - 1)
        still = (f"the first bad is after {good}, at or before {self.candidates[self.bad]}"
                 if bad_end and bad_end.judgement == "WORSE"
                 else f"nothing was bisected ({last} not found worse)")  # fmt: skip
        if self.outcome == "undecided":
            return (f"UNDECIDED at {stopped.name}: the gate could not tell whether it is worse "
                    f"than {first} ({stopped.evidence}); {still}; a wider --margin or more "
                    f"cases would decide it; {calls}")  # fmt: skip
        return f"ERROR at {stopped.name}: {stopped.evidence}; {still}; {calls}"


def bisect(candidates: Sequence[str], baseline: Step, evaluate: Callable[[int], Step],
           on_step: Callable[[Step], None] | None = None) -> Bisection:  # fmt: skip
    """Search ``candidates`` (the good end first, already evaluated as ``baseline``; the
    bad end last) with ``evaluate(index)``, one sequential-gate run of that candidate
    against the baseline. The bad end is checked first; every step is passed to
    ``on_step`` as it is decided."""
    if len(candidates) < 2:
        raise ValueError("a bisection needs a good and a bad candidate")
    found = Bisection(candidates, baseline, bad=len(candidates) - 1)

    def step(index: int) -> Step:
        done = evaluate(index)
        found.steps.append(done)
        if on_step is not None:
            on_step(done)
        return done

    if baseline.judgement == "ERROR":
        found.outcome = "error"
        return found
    if (judged := step(found.bad).judgement) != "WORSE":  # the bad end first
        found.outcome = STOPPED.get(judged, "error")
        return found
    while found.bad - found.good > 1:
        middle = (found.good + found.bad) // 2
        judged = step(middle).judgement
        if judged == "WORSE":
            found.bad = middle
        elif judged == "NOT WORSE":
            found.good = middle
        else:  # never a guess: the range still open is reported
            found.outcome = STOPPED.get(judged, "error")
            return found
    return found
