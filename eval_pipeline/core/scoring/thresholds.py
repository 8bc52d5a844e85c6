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

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.scoring.categories import CategoryScale
from eval_pipeline.core.util import safe_yaml

# A threshold on a score (scores are 0..1): checked per field, so an error names the field
# ('min_mean.order_correctness'), not the whole file.
Share = Annotated[float, Field(ge=0.0, le=1.0)]


class ThresholdsError(ConfigurationError):
    """A thresholds file that cannot be used; the message names the file and field."""


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
    """Checks on a day of production traces (``traces:``; core/traces/daily_checks.py)."""

    model_config = ConfigDict(extra="forbid")

    floors: dict[str, float] = Field(default_factory=dict)  # reference-free metric → floor
    severity: Literal["warn", "error"] = "warn"  # error: a failing day fails its run
    drop_margin: float = Field(0.05, ge=0.0, le=1.0)  # "clearly below": at least this much …
    alpha: float = Field(0.01, gt=0.0, lt=0.5)  # … and Welch's one-sided p below this
    days: int = Field(7, ge=1, le=90)  # previous days compared with


class JudgeThresholds(BaseModel):
    """Calibration of the suite's LLM judges against people (the ``judges:`` section;
    core/analysis/calibration.py)."""

    model_config = ConfigDict(extra="forbid")

    min_kappa: float = Field(0.4, ge=-1.0, le=1.0)  # below: the judge_agreement check warns
    pass_score: float = Field(0.5, ge=0.0, le=1.0)  # a judge score at or above it is a pass


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid")

    primary_metric: str
    min_mean: dict[str, Share] = Field(default_factory=dict)
    all_items_pass: list[str] = Field(default_factory=list)
    category_floors: dict[str, dict[str, Share]] = Field(default_factory=dict)
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



def load_thresholds(path: Path) -> Thresholds:
    try:
        data = safe_yaml.load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ThresholdsError(f"{path}: thresholds file not found") from exc
    except UnicodeDecodeError as exc:
        raise ThresholdsError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                              "save it as UTF-8") from None  # fmt: skip
    except yaml.YAMLError as exc:
        raise ThresholdsError(f"{path}: malformed YAML: {exc}") from exc
    try:
        return Thresholds.model_validate(data or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"field '{'.'.join(map(str, e['loc'])) or '(file)'}': {e['msg']}" for e in exc.errors()
        )
        raise ThresholdsError(f"{path}: {problems}") from exc
