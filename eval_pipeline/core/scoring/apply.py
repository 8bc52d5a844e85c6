"""Apply item evaluators to recorded outputs; agent errors are scored, never skipped."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langfuse import Evaluation

from eval_pipeline.core.errors import USER_CODE_FAILURES
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import RunnerConfig
from eval_pipeline.core.scoring.categories import CategoryScale, valued
from eval_pipeline.core.scoring.evaluations import as_float, item_scores, not_finite
from eval_pipeline.core.scoring.judging import JudgeJob, run_judges, uses_model
from eval_pipeline.core.scoring.summary import RunEvaluation
from eval_pipeline.core.store.records import ItemOutput, ItemScore
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.util.interrupts import pause_problem
from eval_pipeline.core.util.redact import redact
from eval_pipeline.evaluators.declare import Evaluator, RunEvaluator, evaluator_name


@dataclass
class ItemResult:
    """Duck-types Langfuse's ExperimentItemResult for run-level evaluators."""

    item_id: str
    repeat: int
    output: dict[str, Any] | None
    evaluations: list[Evaluation] = field(default_factory=list)


def score_items(
    cases: Sequence[GoldenCase],
    outputs: Iterable[ItemOutput],
    evaluators: Sequence[Evaluator],
    *,
    error_value: float = 0.0,
    judges: RunnerConfig | None = None,
    prices: PriceTable | None = None,
    categories: Mapping[str, CategoryScale] | None = None,
) -> list[ItemScore]:
    """One score per (output, evaluator). An agent error scores ``error_value``; an item
    whose pause at an interrupt is not what its case expects scores 0 (core/util/interrupts.py);
    an evaluator that raises records value None and the exception, so nothing is lost.
    Evaluators that call a model (judges) run through the runner (``judges``: its
    concurrency, timeout and retries; see judging.py), their tokens in the score. A
    category is valued by its metric's scale in ``categories`` (the suite's), or is an
    error of its evaluator (categories.py)."""
    by_id = {c.id: c for c in cases}
    scores: list[ItemScore] = []
    jobs: list[JudgeJob] = []
    for out in outputs:
        case = by_id.get(out.item_id)
        for fn in evaluators:
            name = evaluator_name(fn)
            if case is None:
                scores.append(ItemScore(out.item_id, out.repeat, name, None, "case not in dataset"))
            elif out.error is not None:
                scores.append(
                    ItemScore(
                        out.item_id, out.repeat, name, error_value, f"agent error: {out.error}"
                    )
                )
            elif (paused := pause_problem(case.expected_output, out.output)) is not None:
                scores.append(ItemScore(out.item_id, out.repeat, name, 0.0, paused))
            elif uses_model(fn):
                jobs.append(JudgeJob(case, out, fn))
            else:
                scores.extend(
                    evaluate_one(
                        fn, item_id=out.item_id, repeat=out.repeat, input=case.input,
                        output=out.output, expected_output=case.expected_output,
                        metadata=case.metadata.model_dump(),
                    )
                )  # fmt: skip
    return valued(scores + run_judges(jobs, judges, prices), categories or {})


def values_by_evaluator(scores: Iterable[ItemScore]) -> dict[str, list[float]]:
    """Each evaluator's values; evaluator errors (None) are counted elsewhere, not averaged."""
    values: dict[str, list[float]] = {}
    for s in scores:
        if s.value is not None:
            values.setdefault(s.evaluator, []).append(s.value)
    return values


def evaluate_one(
    fn: Evaluator,
    *,
    item_id: str,
    repeat: int,
    input: Any,
    output: Any,
    expected_output: Any,
    metadata: dict[str, Any],
) -> list[ItemScore]:
    """Call one item evaluator; an evaluator that raises gives value None and the reason."""
    try:
        result = fn(input=input, output=output, expected_output=expected_output, metadata=metadata)
    except USER_CODE_FAILURES as exc:  # (an evaluator that exits gives no score)
        message = redact(f"evaluator error: {type(exc).__name__}: {exc}")
        kind = getattr(exc, "kind", None) or type(exc).__name__  # ScoreError names its kind
        return [ItemScore(item_id, repeat, evaluator_name(fn), None, message, error_kind=kind)]
    found = result if isinstance(result, list) else [result]
    wrong = [r for r in found if not isinstance(r, Evaluation)]
    if wrong:
        message = (f"evaluator error: {evaluator_name(fn)} returned {wrong[0]!r:.60} "
                   f"({type(wrong[0]).__name__}): a function in Langfuse's convention returns "
                   "Evaluation(name=…, value=…) or a list of them; declared with @evaluator "
                   "it may return a number (docs/evaluators.md)")  # fmt: skip
        return [ItemScore(item_id, repeat, evaluator_name(fn), None, message,
                          error_kind="not an Evaluation")]  # fmt: skip
    return item_scores(item_id, repeat, found)


def item_results(outputs: Iterable[ItemOutput], scores: Iterable[ItemScore]) -> list[ItemResult]:
    """Group scores per (item, repeat) the way run-level evaluators expect them."""
    results = {(o.item_id, o.repeat): ItemResult(o.item_id, o.repeat, o.output) for o in outputs}
    for s in scores:
        result = results.get((s.item_id, s.repeat))
        if result is not None:
            result.evaluations.append(
                # value None: a score that could not be given (an error, never a 0)
                Evaluation(name=s.evaluator, value=s.value, comment=s.comment,  # type: ignore[arg-type]
                           metadata=s.metadata)
            )
    return list(results.values())


def run_level(
    run_evaluators: Sequence[RunEvaluator], results: list[ItemResult]
) -> dict[str, RunEvaluation]:
    out: dict[str, RunEvaluation] = {}
    for fn in run_evaluators:
        try:
            result = fn(item_results=results)
        except USER_CODE_FAILURES as exc:
            out[evaluator_name(fn)] = RunEvaluation(None, redact(f"error: {exc}"))
            continue
        for ev in result if isinstance(result, list) else [result]:
            value = as_float(ev.value)
            if value is not None and not math.isfinite(value):
                out[ev.name] = RunEvaluation(None, not_finite(value))
                continue
            out[ev.name] = RunEvaluation(value, ev.comment)
    return out
