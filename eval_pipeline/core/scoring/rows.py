"""The rows of a check's evidence, typed: one model per kind of row, each number named.

A check (threshold, gate or trace check) carries rows of one kind; ``kind`` tells them
apart in the results file (``--json``, docs/results.md), and ``cells()`` is a row as a
table's columns (the report, Dagster's Markdown tables).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Outcome = Literal["pass", "warn", "fail"]


class Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def cells(self) -> dict[str, Any]:
        """The row as table columns, in declaration order (without ``kind``)."""
        return self.model_dump(exclude={"kind"})


# --- threshold checks (core/scoring/thresholds.py) ------------------------------------
class MeanRow(Row):
    """min_mean_scores: a metric's mean against its minimum."""

    kind: Literal["mean"] = "mean"
    metric: str
    mean: float | None
    minimum: float
    ok: bool


class ItemBelowRow(Row):
    """all_items_pass: an item that scored below 1.0 on a must-pass metric."""

    kind: Literal["item_below"] = "item_below"
    metric: str
    item_id: str
    repeat: int
    value: float | None
    comment: str | None


class FloorRow(Row):
    """category_floors: a category's mean of a metric against its floor."""

    kind: Literal["floor"] = "floor"
    metric: str
    category: str
    mean: float | None
    floor: float
    ok: bool


class PrimaryFloorRow(Row):
    """--min-primary: the primary metric's mean against the caller's minimum."""

    kind: Literal["primary_floor"] = "primary_floor"
    metric: str
    mean: float | None
    minimum: float
    ok: bool


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
