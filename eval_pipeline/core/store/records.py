"""Plain records shared by the runner, the results store and the summaries.

They are dataclasses (not ORM rows) so that `core/` stays framework-free and the
records can be JSON-serialised for Dagster metadata and the CLI reports.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from eval_pipeline.core.errors import ServiceError
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.running.failures import Fault
from eval_pipeline.core.scoring.rows import interval, signed
from eval_pipeline.core.util.interrupts import PAUSED_FIELD
from eval_pipeline.evaluators.declare import DataType

ItemStatus = Literal["finished", "paused", "error"]
RunTier = Literal["smoke", "full", "failures"]  # failures: production failures run again


class RunStatus(StrEnum):
    """Where a run is, and whether it may be a baseline (only ``complete`` may):

    - running: its stages are under way;
    - complete: it measured the agent, and its verdict stands;
    - error: it ended without measuring the agent (its verdict is ERROR: items failed
      outside the agent, replay misses, escaped calls, scores that could not be given);
    - stopped: a budget stopped it before its items ran out (it lacks cases);
    - failed: a stage raised (``RunRecord.error`` says why);
    - abandoned: the process driving it ended before it did (killed, or its store went
      away); marked at the next run's start, what it finished kept."""

    RUNNING = "running"
    COMPLETE = "complete"
    ERROR = "error"
    STOPPED = "stopped"
    FAILED = "failed"
    ABANDONED = "abandoned"


class Verdict(StrEnum):
    """What a run says about the agent: PASS (every blocking check passed), FAIL (the agent
    got worse, or is below a floor), UNDECIDED (no check failed, but the gate could not
    tell whether a gated metric got worse: never reported as a pass), ERROR (the run could
    not measure the agent: never a pass). Stored and shown as its value."""

    PASS = "PASS"
    FAIL = "FAIL"
    UNDECIDED = "UNDECIDED"
    ERROR = "ERROR"


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class RunRecord:
    """One evaluation run of a suite against one prompt version."""

    run_id: str
    suite: str
    prompt_name: str
    prompt_version: str
    prompt_hash: str
    dataset_version: str
    model: str
    tier: RunTier
    repeats: int = 1
    prompt_config: dict[str, Any] = field(default_factory=dict)
    model_params: dict[str, Any] = field(default_factory=dict)
    agent_version: str = ""  # the suite's version, its code's and its dependencies' hashes
    agent_versioned: bool = True  # False: nothing says when the agent changed (a service)
    evaluator_versions: dict[str, str] = field(default_factory=dict)
    status: RunStatus = RunStatus.RUNNING
    started_at: datetime = field(default_factory=utcnow)
    finished_at: datetime | None = None
    dagster_run_id: str | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)  # what the run wants a reader to know
    baseline_run_id: str | None = None  # the run it is gated against, decided when planned
    gate_note: str | None = None  # why it has no baseline (so no gate), decided when planned
    options: RunOptions = field(default_factory=RunOptions)  # what the caller asked of it
    code_commit: str | None = None  # of the agent's repository (core/running/commit.py)
    stopped: str | None = None  # why items were left unstarted (a budget reached), or None
    owner: str | None = None  # host:pid:start of the process driving it (in-process runs)
    # why it may never be a baseline (init's placeholder cases, every item failed in the
    # agent), decided when it settled (core/evaluation/baseline.py ``unfit``), or None
    not_baseline: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (the options as their fields)."""
        return asdict(self) | {"options": self.options.model_dump(mode="json")}


@dataclass
class ItemOutput:
    """What the agent produced for one case and one repeat (or the error it raised)."""

    item_id: str
    repeat: int
    output: dict[str, Any] | None
    error: str | None = None
    error_kind: str | None = None  # "timeout", "HTTP 500", "ValueError", … (running/failures.py)
    latency_ms: float = 0.0
    input_tokens: int = 0  # every model call of every attempt, an errored item's included
    output_tokens: int = 0
    cost_usd: float = 0.0  # of the models with a known price (see unpriced_models)
    attempts: int = 1
    source_run_id: str | None = None  # set when reused from the memo: the run that produced it
    usage: dict[str, dict[str, int]] = field(default_factory=dict)  # model → tokens, calls
    unpriced_models: list[str] = field(default_factory=list)
    # Whose failure the error is: "agent" (scores 0, counts in the gate), "infrastructure"
    # or "configuration" (the run cannot measure the item: ERROR). See running/failures.py.
    fault: Fault | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def status(self) -> ItemStatus:
        """ "error", "paused" (it stopped at an interrupt no scripted answer resumed:
        core/util/interrupts.py) or "finished"."""
        if self.error is not None:
            return "error"
        paused = isinstance(self.output, dict) and self.output.get(PAUSED_FIELD) is True
        return "paused" if paused else "finished"


@dataclass(frozen=True)
class VerdictRecord:
    """What a run concluded, kept with it: the latest verdict of every suite × version is
    read from these (``eval-pipeline verdicts``, Dagster's ``verdicts`` table)."""

    run_id: str
    verdict: Verdict  # stored as its value: PASS, FAIL, UNDECIDED or ERROR
    reason: str  # the failed checks, the undecided metrics or the first error ("" for PASS)
    metric: str | None = None  # the metric that backs the verdict (verdict_record), if gated
    delta: float | None = None  # its paired Δ against the baseline
    ci_low: float | None = None
    ci_high: float | None = None
    baseline_run_id: str | None = None
    decided_after: str | None = None  # a sequential run: "decided after N of M cases …"

    def __post_init__(self) -> None:
        """A verdict read back as its stored string becomes the enum; any other string is
        not a verdict this version knows (a store written by another version, edited)."""
        if not isinstance(self.verdict, Verdict):
            if not isinstance(self.verdict, str) or self.verdict not in Verdict.__members__:
                known = ", ".join(Verdict)
                raise ServiceError(f"run {self.run_id}: the stored verdict {self.verdict!r} "
                                   f"is none of {known}")  # fmt: skip
            object.__setattr__(self, "verdict", Verdict(self.verdict))

    @property
    def delta_text(self) -> str:
        """Δ as every view shows it ("–" without a gate)."""
        return "–" if self.delta is None else signed(self.delta)

    @property
    def interval_text(self) -> str:
        return interval(self.ci_low, self.ci_high) or "–"


@dataclass
class ItemScore:
    """One evaluator's value for one case and one repeat."""

    item_id: str
    repeat: int
    evaluator: str
    value: float | None
    comment: str | None = None
    metadata: dict[str, Any] | None = None  # e.g. the judge model and prompt hash
    # Set when the evaluator could not score (it raised, its judge call failed): the value
    # is None, the comment says why, and the run counts it as an error, never as a 0.
    error_kind: str | None = None
    data_type: DataType = "NUMERIC"  # as the evaluator declared it: NUMERIC, BOOLEAN, CATEGORICAL
    category: str | None = None  # a CATEGORICAL score's category (its value: the suite's scale)
