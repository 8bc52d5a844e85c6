"""From per-repeat scores to one value per item, and how unstable items are.

Reducers (per item, over its K repeats): ``mean`` (default), ``median``, ``max``,
``pass_at_k`` (1 if any repeat passes) and ``pass_all_k`` (pass^k: 1 only if every repeat
passes). An item passes a metric when its value is at least ``pass_threshold`` (1.0 by
default: the evaluator found nothing wrong).
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from eval_pipeline.core.store.records import ItemScore

REDUCERS = ("mean", "median", "max", "pass_at_k", "pass_all_k")


def _reduce(values: Sequence[float], reducer: str, pass_threshold: float) -> float:
    if reducer == "mean":
        return statistics.fmean(values)
    if reducer == "median":
        return float(statistics.median(values))
    if reducer == "max":
        return max(values)
    if reducer == "pass_at_k":
        return float(any(v >= pass_threshold for v in values))
    if reducer == "pass_all_k":
        return float(all(v >= pass_threshold for v in values))
    raise ValueError(f"unknown reducer {reducer!r} (use one of: {', '.join(REDUCERS)})")


def repeat_values(scores: Iterable[ItemScore], metric: str) -> dict[str, list[float]]:
    """item id → the metric's values over repeats (evaluator errors count as 0)."""
    by_item: dict[str, dict[int, float]] = defaultdict(dict)
    for s in scores:
        if s.evaluator == metric:
            by_item[s.item_id][s.repeat] = 0.0 if s.value is None else s.value
    return {item: [v for _, v in sorted(reps.items())] for item, reps in by_item.items()}


def reduce_items(
    scores: Iterable[ItemScore], metric: str, reducer: str = "mean", pass_threshold: float = 1.0
) -> dict[str, float]:
    """item id → one value for the metric."""
    return {
        item: _reduce(values, reducer, pass_threshold)
        for item, values in repeat_values(scores, metric).items()
    }


def flaky_items(
    scores: Sequence[ItemScore], *, pass_threshold: float = 1.0, limit: int = 20
) -> list[dict[str, Any]]:
    """Items whose value changes across repeats, most variable first."""
    rows: list[dict[str, Any]] = []
    for metric in sorted({s.evaluator for s in scores}):
        for item, values in repeat_values(scores, metric).items():
            if len(values) > 1 and len(set(values)) > 1:
                passes = [v >= pass_threshold for v in values]
                rows.append(
                    {
                        "item_id": item,
                        "metric": metric,
                        "values": values,
                        "variance": round(statistics.pvariance(values), 6),
                        "pass_rate": round(sum(passes) / len(passes), 4),
                    }
                )
    rows.sort(key=lambda r: (-r["variance"], r["item_id"], r["metric"]))
    return rows[:limit]


def outcome_flips(
    series: Sequence[dict[str, float]], pass_threshold: float = 1.0
) -> dict[str, int]:
    """item id → how often its pass/fail outcome changed between consecutive runs."""
    flips: dict[str, int] = defaultdict(int)
    for before, after in itertools.pairwise(series):
        for item in before.keys() & after.keys():
            if (before[item] >= pass_threshold) != (after[item] >= pass_threshold):
                flips[item] += 1
    return dict(flips)


SCALES = {
    "median": "each case's median of its {k} answers",
    "max": "each case's best of its {k} answers",
    "pass_at_k": "whether at least one of a case's {k} answers passes",
    "pass_all_k": "whether all {k} of a case's answers pass",
}


def margin_scale(reducer: str, repeats: int) -> str | None:
    """What the gate's margin measures when repeats are reduced by ``reducer``: None when
    it is per answer (the mean of the answers, or one answer a case), else in words. The
    gate is valid on the reducer's own scale, but that is not the per-answer scale a team
    reads the margin on: a candidate worse by the margin per answer passed pass_all_k of 5
    answers in 95% of runs at a per-answer rate of 0.5, pass_at_k and max of 3 in 57% at
    0.7 (benchmarks/gate_validity.py; docs/gate.md)."""
    if reducer == "mean" or repeats < 2:
        return None
    return SCALES[reducer].format(k=repeats)


def per_answer_drop(reducer: str, repeats: int, rate: float, drop: float) -> float | None:
    """The drop on the reducer's scale that a drop of ``drop`` in the per-answer pass rate
    makes, from ``rate``, for independent answers (pass_all_k: rate^k − (rate − drop)^k;
    pass_at_k: (1 − rate + drop)^k − (1 − rate)^k); None for the other reducers, whose
    scale depends on more than the pass rate."""
    k, low = repeats, max(0.0, rate - drop)
    if reducer == "pass_all_k":
        return rate**k - low**k
    if reducer == "pass_at_k":
        return (1 - low) ** k - (1 - rate) ** k
    return None
