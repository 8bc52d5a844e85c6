"""A suite's thresholds file and the plain checks behind the Dagster asset checks.

```yaml
primary_metric: order_correctness
min_mean: {order_correctness: 0.85}          # ERROR, blocking
all_items_pass: [no_hallucinated_items]      # 1.0 on every item, ERROR, blocking
category_floors:                             # WARN
  order_correctness: {simple: 0.9}
traces:                                      # production traces, per day (WARN by default)
  floors: {tool_protocol: 0.75}
categories:                                  # what a categorical metric's categories are worth
  tone: {order: [rude, neutral, friendly]}   # worst first (core/scoring/categories.py)
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eval_pipeline.core.scoring.categories import CategoryScale
from eval_pipeline.core.scoring.rows import CheckRow, FloorRow, ItemBelowRow, MeanRow
from eval_pipeline.core.scoring.summary import Summary
from eval_pipeline.core.store.records import ItemScore


class ThresholdsError(ValueError):
    pass


class RegressionConfig(BaseModel):
    """How a run is compared with its baseline (the ``regression:`` section)."""

    model_config = ConfigDict(extra="forbid")

    baseline_label: str = "production"
    margin: float = Field(0.02, ge=0.0, le=1.0)
    alpha: float = Field(0.05, gt=0.0, lt=0.5)
    reducer: Literal["mean", "median", "max", "pass_at_k", "pass_all_k"] = "mean"
    pass_threshold: float = Field(1.0, ge=0.0, le=1.0)
    metrics: list[str] | None = None  # default: the primary metric and the min_mean metrics
    binary_metrics: list[str] | None = None  # McNemar; default: the all_items_pass metrics
    max_cost_ratio: float | None = Field(None, gt=0.0)
    max_latency_ratio: float | None = Field(None, gt=0.0)


class TraceThresholds(BaseModel):
    """Checks on a day of production traces (the ``traces:`` section; core/traces/checks.py)."""

    model_config = ConfigDict(extra="forbid")

    floors: dict[str, float] = Field(default_factory=dict)  # reference-free metric → floor
    severity: Literal["warn", "error"] = "warn"  # error: a failing day fails its run
    drop_margin: float = Field(0.05, ge=0.0, le=1.0)  # "clearly below": at least this much …
    alpha: float = Field(0.01, gt=0.0, lt=0.5)  # … and Welch's one-sided p below this
    days: int = Field(7, ge=1, le=90)  # previous days compared with


class JudgeThresholds(BaseModel):
    """Calibration of the suite's LLM judges against people (the ``judges:`` section;
    core/calibration.py)."""

    model_config = ConfigDict(extra="forbid")

    min_kappa: float = Field(0.4, ge=-1.0, le=1.0)  # below: the judge_agreement check warns
    pass_score: float = Field(0.5, ge=0.0, le=1.0)  # a judge score at or above it is a pass


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid")

    primary_metric: str
    min_mean: dict[str, float] = Field(default_factory=dict)
    all_items_pass: list[str] = Field(default_factory=list)
    category_floors: dict[str, dict[str, float]] = Field(default_factory=dict)
    regression: RegressionConfig = Field(default_factory=RegressionConfig)
    traces: TraceThresholds = Field(default_factory=TraceThresholds)
    judges: JudgeThresholds = Field(default_factory=JudgeThresholds)
    categories: dict[str, CategoryScale] = Field(default_factory=dict)  # categorical metrics

    @property
    def gated_metrics(self) -> list[str]:
        configured = self.regression.metrics
        return (
            configured
            if configured is not None
            else list(dict.fromkeys([self.primary_metric, *self.min_mean]))
        )

    @property
    def binary_metrics(self) -> list[str]:
        configured = self.regression.binary_metrics
        return configured if configured is not None else list(self.all_items_pass)

    @property
    def deciding_metrics(self) -> set[str]:
        """Every metric a blocking check or the gate reads: a value missing there leaves
        the verdict unknown."""
        return {self.primary_metric, *self.min_mean, *self.all_items_pass,
                *self.gated_metrics, *self.binary_metrics}  # fmt: skip

    def model_post_init(self, _: Any) -> None:
        values = [*self.min_mean.values()] + [
            v for floors in self.category_floors.values() for v in floors.values()
        ]
        if any(not 0.0 <= v <= 1.0 for v in values):
            raise ValueError("every threshold must be between 0 and 1")


def load_thresholds(path: Path) -> Thresholds:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ThresholdsError(f"{path}: thresholds file not found") from exc
    except yaml.YAMLError as exc:
        raise ThresholdsError(f"{path}: malformed YAML: {exc}") from exc
    try:
        return Thresholds.model_validate(data or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"field '{'.'.join(map(str, e['loc'])) or '(file)'}': {e['msg']}" for e in exc.errors()
        )
        raise ThresholdsError(f"{path}: {problems}") from exc


@dataclass
class CheckOutcome:
    passed: bool
    description: str
    rows: list[CheckRow] = field(default_factory=list)
    tested: bool = True  # False: the thresholds configure nothing for it (not a pass)

    def label(self, blocking: bool) -> Label:
        """PASS, FAIL (blocking) or WARN, or N/A for a check that tested nothing."""
        if not self.tested:
            return "N/A"
        return "PASS" if self.passed else "FAIL" if blocking else "WARN"


Label = Literal["PASS", "FAIL", "WARN", "UNDECIDED", "N/A"]


@dataclass
class ThresholdCheck:
    """One threshold check of a run: its name, what it found, whether it blocks."""

    name: str
    outcome: CheckOutcome
    blocking: bool

    @property
    def label(self) -> Label:
        return self.outcome.label(self.blocking)


def not_tested(why: str) -> CheckOutcome:
    return CheckOutcome(True, f"not tested: {why}", tested=False)


def check_min_mean(summary: Summary, thresholds: Thresholds) -> CheckOutcome:
    if not thresholds.min_mean:
        return not_tested("the thresholds set no min_mean")
    rows: list[MeanRow] = []
    failed = []
    for metric, minimum in thresholds.min_mean.items():
        value = summary.metric(metric)
        ok = value is not None and value >= minimum
        rows.append(MeanRow(metric=metric, mean=value, minimum=minimum, ok=ok))
        if not ok:
            failed.append(f"{metric} {value} < {minimum}")
    text = (
        "all means at or above their minimum"
        if not failed
        else "below minimum: " + ", ".join(failed)
    )
    return CheckOutcome(not failed, text, rows)


def check_all_items_pass(scores: Sequence[ItemScore], thresholds: Thresholds) -> CheckOutcome:
    if not thresholds.all_items_pass:
        return not_tested("the thresholds list no all_items_pass metrics")
    rows: list[CheckRow] = [
        ItemBelowRow(metric=s.evaluator, item_id=s.item_id, repeat=s.repeat, value=s.value,
                     comment=s.comment)
        for s in scores
        if s.evaluator in thresholds.all_items_pass and s.value != 1.0
    ]  # fmt: skip
    seen = {s.evaluator for s in scores}
    missing = [m for m in thresholds.all_items_pass if m not in seen]
    if missing:
        return CheckOutcome(False, f"no scores for {', '.join(missing)}", rows)
    if rows:
        return CheckOutcome(False, f"{len(rows)} item(s) below 1.0", rows)
    return CheckOutcome(True, f"every item scored 1.0 on {', '.join(thresholds.all_items_pass)}")


def check_category_floors(summary: Summary, thresholds: Thresholds) -> CheckOutcome:
    if not thresholds.category_floors:
        return not_tested("the thresholds set no category_floors")
    rows: list[FloorRow] = []
    failed = []
    for metric, floors in thresholds.category_floors.items():
        for category, floor in floors.items():
            row = summary.by_category.get(category)
            value = row.means.get(metric) if row else None
            ok = value is None or value >= floor  # a tier without the category can't miss it
            rows.append(FloorRow(metric=metric, category=category, mean=value, floor=floor,
                                 ok=ok))  # fmt: skip
            if not ok:
                failed.append(f"{category} {metric} {value} < {floor}")
    if not any(r.mean is not None for r in rows):
        return CheckOutcome(True, "not tested: no case of a floored category in this tier",
                            rows, tested=False)  # fmt: skip
    text = "every category at or above its floor" if not failed else "; ".join(failed)
    return CheckOutcome(not failed, text, rows)


def evaluate_thresholds(
    summary: Summary, scores: Sequence[ItemScore], thresholds: Thresholds
) -> list[ThresholdCheck]:
    """Every threshold check of a run."""
    return [
        ThresholdCheck("min_mean_scores", check_min_mean(summary, thresholds), True),
        ThresholdCheck("all_items_pass", check_all_items_pass(scores, thresholds), True),
        ThresholdCheck("category_floors", check_category_floors(summary, thresholds), False),
    ]
