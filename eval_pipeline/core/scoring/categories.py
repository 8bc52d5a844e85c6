"""Categorical scores: an evaluator that answers with a category ("friendly", "neutral",
"rude") instead of a number.

A category is kept as it was given (``ItemScore.category``, Langfuse's CATEGORICAL
``stringValue``). The gate and the means need a number, and only the suite may say what
a category is worth, in its thresholds file:

```yaml
categories:
  tone: {order: [rude, neutral, friendly]}              # worst first: 0, 0.5, 1
  verdict: {pass: [correct, partly], values: [correct, partly, wrong]}   # 1 or 0
```

With ``order``, a category's value is its rank over (k − 1), so the gate compares the
metric as a number in [0, 1]; with ``pass``, 1 for a category in the pass set and 0
otherwise, so the gate compares it as pass/fail (McNemar in the fixed gate). A category
the declaration does not list, or a categorical metric with no declaration, is an error
of the evaluator that names it and the value: never a 0.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

from eval_pipeline.core.store.records import ItemScore

UNDECLARED = "undeclared category"  # the error kind of a category the suite cannot value


class CategoryScale(BaseModel):
    """What each category of one metric is worth (the thresholds file's ``categories:``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    order: list[str] | None = None  # worst first
    passing: list[str] | None = Field(None, alias="pass")
    values: list[str] | None = None  # every category, with ``pass``

    @model_validator(mode="after")
    def _one_way(self) -> CategoryScale:
        if (self.order is None) == (self.passing is None):
            raise ValueError("give either order: [worst, …, best] or pass: [...] with values")
        if self.order is not None:
            if len(self.order) < 2 or len(set(self.order)) != len(self.order):
                raise ValueError("order needs two or more distinct categories, worst first")
            if self.values is not None:
                raise ValueError("values goes with pass, not with order (order lists them all)")
            return self
        if not self.values or len(set(self.values)) != len(self.values):
            raise ValueError("pass needs values: every category the metric may take, once")
        if unknown := [c for c in self.passing or [] if c not in self.values]:
            raise ValueError(f"pass lists {unknown}, which values does not")
        return self

    @property
    def known(self) -> list[str]:
        return list(self.order or self.values or [])

    @property
    def binary(self) -> bool:
        """Whether the values are pass/fail (a pass set, or an order of two)."""
        return self.passing is not None or len(self.order or []) == 2

    def value(self, category: str) -> float | None:
        """The category's worth, None for a category this scale does not list."""
        if self.order is not None:
            if category not in self.order:
                return None
            return self.order.index(category) / (len(self.order) - 1)
        if category not in (self.values or []):
            return None
        return 1.0 if category in (self.passing or []) else 0.0


def valued(scores: Iterable[ItemScore], scales: Mapping[str, CategoryScale]) -> list[ItemScore]:
    """Every categorical score with the value its metric's scale gives it, or an error
    naming the evaluator and the category when the scale does not list it or the suite
    declares none; other scores as they are."""
    out = []
    for s in scores:
        if s.category is None or s.error_kind is not None:
            out.append(s)
            continue
        scale = scales.get(s.evaluator)
        value = scale.value(s.category) if scale is not None else None
        if value is not None:
            out.append(dataclasses.replace(s, value=value))
            continue
        why = (f"not one of {scale.known}" if scale is not None else
               f"the suite declares no categories for {s.evaluator} (thresholds file: "
               f"categories: {{{s.evaluator}: {{order: [worst, …, best]}}}})")  # fmt: skip
        out.append(dataclasses.replace(
            s, value=None, error_kind=UNDECLARED,
            comment=f"evaluator error: {s.evaluator} returned the category {s.category!r}, "
                    f"{why}",
        ))  # fmt: skip
    return out


def distribution_line(metric: str, counts: Mapping[str, int]) -> str:
    """``tone: friendly 12 · neutral 5 · rude 3`` (the reports' one line per metric)."""
    return f"{metric}: " + " · ".join(f"{c} {n}" for c, n in counts.items())


def distributions(scores: Iterable[ItemScore]) -> dict[str, dict[str, int]]:
    """Per categorical metric, how many scores fell in each category (most first)."""
    counts: dict[str, Counter[str]] = {}
    for s in scores:
        if s.category is not None:
            counts.setdefault(s.evaluator, Counter())[s.category] += 1
    return {m: dict(c.most_common()) for m, c in sorted(counts.items())}
