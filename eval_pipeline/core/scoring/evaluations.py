"""What an evaluator returned, as stored scores: one place for both plain evaluators and
model-backed ones (judges).

A value is kept when it is a finite number (a boolean counts as 0/1) or a category (a
string: kept as the score's ``category``, valued by the suite's scale in
core/scoring/categories.py); a NaN or an infinity is refused where it is made (it could
be neither averaged nor sent to Langfuse: JSON has no NaN) and recorded as an error of the
evaluator, never as a 0. None is "nothing to score here" (e.g. a correction check on a
case without a correction).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from langfuse import Evaluation

from eval_pipeline.core.store.records import ItemScore
from eval_pipeline.evaluators.declare import DataType

NOT_FINITE = "not a finite number"
UNSUPPORTED = "unsupported value"  # a category or a text where a number is scored


def item_scores(
    item_id: str, repeat: int, evaluations: Sequence[Evaluation],
    extra: Mapping[str, Any] | None = None,
) -> list[ItemScore]:  # fmt: skip
    """The scores of one item's evaluations; ``extra`` (a judge's spending) goes into the
    first one's metadata (one call, counted once)."""
    scores = []
    for index, ev in enumerate(evaluations):
        paid = extra if extra and index == 0 else {}
        metadata = {**(ev.metadata or {}), **paid}
        if isinstance(ev.value, str) and ev.data_type in (None, "CATEGORICAL"):
            scores.append(ItemScore(item_id, repeat, ev.name, None, ev.comment, plain(metadata),
                                    data_type="CATEGORICAL", category=ev.value))  # fmt: skip
            continue
        value = as_float(ev.value)
        if ev.value is not None and value is None:  # a text, a list: neither
            scores.append(ItemScore(item_id, repeat, ev.name, None, unsupported(ev),
                                    plain(metadata), error_kind=UNSUPPORTED))  # fmt: skip
            continue
        if value is not None and not math.isfinite(value):
            scores.append(ItemScore(item_id, repeat, ev.name, None, not_finite(value),
                                    plain(metadata), error_kind=NOT_FINITE))  # fmt: skip
            continue
        data_type: DataType = "BOOLEAN" if ev.data_type == "BOOLEAN" else "NUMERIC"
        scores.append(ItemScore(item_id, repeat, ev.name, value, ev.comment, plain(metadata),
                                data_type=data_type))  # fmt: skip
    return scores


def unsupported(ev: Evaluation) -> str:
    """Why a value that is not a number is an error, not a silent None (which the gate
    would have counted as 0)."""
    kind = ev.data_type or "a " + type(ev.value).__name__
    return (
        f"evaluator error: {ev.name} returned {ev.value!r} ({kind}); return a number, a "
        "boolean (0 or 1) or a category (a string, declared CATEGORICAL or undeclared)"
    )


def not_finite(value: float) -> str:
    return (f"evaluator error: returned {value}, not a finite number; return a number "
            "(or None when the item cannot be scored)")  # fmt: skip


def as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, int | float) else None


def plain(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Score metadata as stored: JSON-able values only (others by their text)."""
    if not metadata:
        return None
    return {str(k): v if isinstance(v, str | int | bool | None)
            or (isinstance(v, float) and math.isfinite(v)) else str(v)
            for k, v in metadata.items()}  # fmt: skip
