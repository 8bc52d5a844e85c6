"""The rows of a check's evidence, typed: one model per kind of row, each number named.

A check (threshold, gate or trace check) carries rows of one kind; ``kind`` tells them
apart in the results file (``--json``, docs/results.md). Each row says itself, so a
renderer lays it out and never picks it apart by its kind: ``cells()`` is the row as a
table's columns (Dagster's Markdown tables), ``numbers()`` its numbers under labels that
name their metric or category (Dagster's check metadata), ``signed`` and ``interval``
the one way a Δ and its interval are written (rounded once, here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Outcome = Literal["pass", "warn", "fail"]


def signed(value: float) -> str:
    """A Δ as every surface shows it: "+0.123", "-0.045"."""
    return f"{value:+.3f}"


def interval(low: float | None, high: float | None) -> str | None:
    """An interval as every surface shows it, "[-0.120, +0.034]"; None without one."""
    return None if low is None or high is None else f"[{signed(low)}, {signed(high)}]"


class Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def cells(self) -> dict[str, Any]:
        """The row as table columns, in declaration order (without ``kind``)."""
        return self.model_dump(exclude={"kind"})

    def numbers(self, *, settled: bool = False) -> dict[str, Any]:
        """Its numbers, each under a label naming its metric (and category): none unless
        the kind says them. ``settled``: the check decided, so what would decide a row
        (cases needed) is not shown."""
        return {}

    def item_failure(self) -> tuple[str, str] | None:
        """The item this row fails and why (JUnit's failure of its test case), if any."""
        return None


# --- threshold checks (core/scoring/thresholds.py) ------------------------------------
class MeanRow(Row):
    """min_mean_scores: a metric's mean against its minimum."""

    kind: Literal["mean"] = "mean"
    metric: str
    mean: float | None
    minimum: float
    ok: bool

    def numbers(self, *, settled: bool = False) -> dict[str, Any]:
        if self.mean is None:
            return {}
        return {f"{self.metric} mean": self.mean, f"{self.metric} minimum": self.minimum}


class ItemBelowRow(Row):
    """all_items_pass: an item that scored below 1.0 on a must-pass metric."""

    kind: Literal["item_below"] = "item_below"
    metric: str
    item_id: str
    repeat: int
    value: float | None
    comment: str | None

    def item_failure(self) -> tuple[str, str] | None:
        return self.item_id, f"{self.metric}: {self.comment}"


class FloorRow(Row):
    """category_floors: a category's mean of a metric against its floor."""

    kind: Literal["floor"] = "floor"
    metric: str
    category: str
    mean: float | None
    floor: float
    ok: bool

    def numbers(self, *, settled: bool = False) -> dict[str, Any]:
        if self.mean is None:
            return {}
        subject = f"{self.category} {self.metric}"
        return {f"{subject} mean": self.mean, f"{subject} floor": self.floor}


class PrimaryFloorRow(Row):
    """--min-primary: the primary metric's mean against the caller's minimum."""

    kind: Literal["primary_floor"] = "primary_floor"
    metric: str
    mean: float | None
    minimum: float
    ok: bool

    def numbers(self, *, settled: bool = False) -> dict[str, Any]:
        if self.mean is None:
            return {}
        return {f"{self.metric} mean": self.mean, f"{self.metric} minimum": self.minimum}


# --- the regression gate (core/scoring/gate.py) ---------------------------------------
class PairedRow(Row):
    """paired_gate and category_deltas: candidate − baseline per item, on one metric (and
    one category). Without a test (too few items) only ``delta`` and ``note`` are given."""

    kind: Literal["paired"] = "paired"
    metric: str
    category: str | None = None
    n: int
    delta: float
    ci_low: float | None  # the two-sided (1 − 2α) CI of Δ (Student t), or the sequential
    # gate's confidence bounds (each one-sided, time-uniform: core/scoring/sequential.py)
    ci_high: float | None
    p_value: float | None  # one-sided, H1: the candidate is worse
    p_holm: float | None = None  # Holm-adjusted over the check's family
    mde: float | None  # the drop detectable with 80% power at this n
    decision: Outcome  # the comparison alone, before Holm
    outcome: Outcome | None = None  # after Holm (paired_gate)
    cases_needed: int | None  # to detect a drop of the margin with 80% power
    note: str
    # an undecided sequential row: what its pairs did establish (paired_gate.py ``learned``)
    learned: str | None = None

    @field_validator("ci_low", "ci_high")
    @classmethod
    def _possible(cls, value: float | None) -> float | None:
        """Within what a difference of two scores in [0, 1] can be: a t interval on few,
        spread pairs reaches past ±1 ([-1.060, -0.440] read as a drop beyond the worst)."""
        return None if value is None else min(1.0, max(-1.0, value))

    @property
    def subject(self) -> str:
        """What the row compares: its category, else its metric."""
        return self.category or self.metric

    @property
    def delta_text(self) -> str:
        return signed(self.delta)

    @property
    def interval_text(self) -> str | None:
        return interval(self.ci_low, self.ci_high)

    def numbers(self, *, settled: bool = False) -> dict[str, Any]:
        subject = self.subject
        numbers: dict[str, Any] = {f"{subject} Δ": round(self.delta, 3),  # (as it is shown)
                                   f"{subject} n": self.n}  # fmt: skip
        if self.interval_text is not None:
            numbers[f"{subject} CI"] = self.interval_text
            numbers[f"{subject} p (Holm)"] = self.p_holm
        # what would decide it: an undecided row's only (a decided one needs no more)
        if self.cases_needed and not settled and self.outcome in (None, "warn"):
            numbers[f"{subject} cases needed in all"] = self.cases_needed
        if self.learned:
            numbers[f"{subject} established"] = self.learned
        return numbers


def backing_row(
    paired: Sequence[PairedRow], undecided: Sequence[PairedRow], primary: str | None
) -> PairedRow | None:
    """The row that backs a gate's finding: the largest drop among the rows found worse,
    else the undecided row that could be worst (lowest bound), else the primary metric's
    (when it was compared). Before, a FAIL on tool_protocol_every_turn (Δ −0.367) showed
    the primary's Δ +0.000 [−0.147, +0.210]."""
    worse = [r for r in paired if r.outcome == "fail"]
    if worse:
        return min(worse, key=lambda r: r.delta)
    if undecided:
        return min(undecided, key=lambda r: r.delta if r.ci_low is None else r.ci_low)
    return next((r for r in paired if r.metric == primary), None)


class BinaryRow(Row):
    """binary_gate: pass/fail flips per item (exact McNemar)."""

    kind: Literal["binary"] = "binary"
    metric: str
    n: int
    newly_failing: int
    newly_passing: int
    baseline_rate: float | None
    candidate_rate: float | None
    candidate_wilson_95: str
    p_value: float
    p_holm: float
    outcome: Outcome

    def numbers(self, *, settled: bool = False) -> dict[str, Any]:
        return {f"{self.metric} newly failing": self.newly_failing,
                f"{self.metric} newly passing": self.newly_passing,
                f"{self.metric} p (Holm)": self.p_holm}  # fmt: skip


class RatioRow(Row):
    """cost_latency: the paired ratio candidate/baseline of cost or latency per item."""

    kind: Literal["ratio"] = "ratio"
    metric: str  # cost or latency
    n: int
    ratio: float | None  # None: fewer than two items with both values above 0
    ci_low: float | None = None
    ci_high: float | None = None
    max_ratio: float | None = None
    outcome: Outcome
    note: str | None = None

    def numbers(self, *, settled: bool = False) -> dict[str, Any]:
        return {f"{self.metric} ratio": self.ratio}


class WorseItem(Row):
    """An item whose primary metric dropped against the baseline."""

    kind: Literal["worse_item"] = "worse_item"
    item_id: str
    baseline: float
    candidate: float


# --- trace checks (core/traces/daily_checks.py) ---------------------------------------------
class TraceFloorRow(Row):
    """Today's mean of a reference-free metric over sampled traces against its floor."""

    kind: Literal["trace_floor"] = "trace_floor"
    metric: str
    mean: float | None
    floor: float
    traces: int
    ok: bool


class TraceDropRow(Row):
    """Today's traces against the previous days pooled (Welch, one-sided)."""

    kind: Literal["trace_drop"] = "trace_drop"
    metric: str
    today: float
    previous: float
    delta: float
    days: int
    p_value: float
    clearly_below: bool


CheckRow = Annotated[
    MeanRow | ItemBelowRow | FloorRow | PrimaryFloorRow | PairedRow | BinaryRow | RatioRow
    | TraceFloorRow | TraceDropRow,
    Field(discriminator="kind"),
]  # fmt: skip
