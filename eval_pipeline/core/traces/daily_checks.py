"""Checks on a day of production traces: reference-free metrics against floors, and against
the previous days.

Rules (the suite's thresholds file, ``traces:``):
- floor: a metric whose mean over the day's sampled traces is below its floor fails;
- drop: a metric is *clearly below* the previous days when its mean is lower than theirs
  (all their traces pooled, up to ``days`` days back) by at least ``drop_margin`` **and**
  Welch's one-sided t-test gives p < ``alpha``. It needs at least MIN_DAYS previous days
  with data and MIN_TRACES traces today; otherwise it is not tested, and says so.
Both report at the configured ``severity`` (warn, or error to fail the run).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eval_pipeline.core.scoring.checks import CheckOutcome, not_tested
from eval_pipeline.core.scoring.rows import CheckRow, TraceDropRow, TraceFloorRow
from eval_pipeline.core.scoring.stats import welch_less
from eval_pipeline.core.scoring.thresholds import TraceThresholds

MIN_DAYS = 2
MIN_TRACES = 5


@dataclass(frozen=True)
class DayStats:
    """One metric over one day's scored traces."""

    mean: float
    sd: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> DayStats:
        n = len(values)
        mean = sum(values) / n
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
        return cls(mean, sd, n)


def pooled(days: Sequence[DayStats]) -> DayStats:
    """Several days as one sample: the mean and SD of all their traces together."""
    n = sum(d.n for d in days)
    mean = sum(d.mean * d.n for d in days) / n
    within = sum((d.n - 1) * d.sd**2 for d in days)
    between = sum(d.n * (d.mean - mean) ** 2 for d in days)
    return DayStats(mean, math.sqrt((within + between) / (n - 1)) if n > 1 else 0.0, n)


def check_floors(today: Mapping[str, DayStats], config: TraceThresholds) -> CheckOutcome:
    if not config.floors:
        return not_tested("the thresholds set no traces.floors")
    rows: list[CheckRow] = []
    failed = []
    for metric, floor in config.floors.items():
        day = today.get(metric)
        ok = day is None or day.mean >= floor
        rows.append(TraceFloorRow(metric=metric, mean=round(day.mean, 4) if day else None,
                                  floor=floor, traces=day.n if day else 0, ok=ok))  # fmt: skip
        if not ok and day is not None:  # (only a day with traces can miss its floor)
            failed.append(f"{metric} {day.mean:.3f} < {floor}")
    if not any(isinstance(r, TraceFloorRow) and r.traces for r in rows):
        return CheckOutcome(True, "not tested: no scored trace today", rows, tested=False)
    text = (
        "every metric at or above its floor" if not failed else "below floor: " + ", ".join(failed)
    )
    return CheckOutcome(not failed, text, rows)


def check_drop(
    today: Mapping[str, DayStats],
    previous: Sequence[Mapping[str, DayStats]],
    config: TraceThresholds,
) -> CheckOutcome:
    """Each metric today against the previous days pooled (see the module docstring)."""
    rows: list[CheckRow] = []
    dropped, untested = [], []
    for metric, day in sorted(today.items()):
        before = [p[metric] for p in previous if metric in p and p[metric].n]
        if len(before) < MIN_DAYS or day.n < MIN_TRACES:
            untested.append(metric)
            continue
        base = pooled(before)
        if day.sd == 0 and base.sd == 0:
            p_value = 0.0 if day.mean < base.mean else 1.0
        else:
            p_value = welch_less(day.mean, day.sd, day.n, base.mean, base.sd, base.n)
        clearly = day.mean <= base.mean - config.drop_margin and p_value < config.alpha
        rows.append(TraceDropRow(
            metric=metric, today=round(day.mean, 4), previous=round(base.mean, 4),
            delta=round(day.mean - base.mean, 4), days=len(before),
            p_value=float(f"{p_value:.3g}"), clearly_below=clearly,
        ))  # fmt: skip
        if clearly:
            dropped.append(f"{metric} {day.mean:.3f} vs {base.mean:.3f} (p={p_value:.2g})")
    if not rows:
        return not_tested(f"needs {MIN_DAYS} previous days with scored traces and "
                          f"{MIN_TRACES} traces today")  # fmt: skip
    text = ("clearly below the previous days: " + ", ".join(dropped)) if dropped else (
        "no metric clearly below the previous days"
    )  # fmt: skip
    if untested:
        text += f" (not enough history for {', '.join(untested)})"
    return CheckOutcome(not dropped, text, rows)
