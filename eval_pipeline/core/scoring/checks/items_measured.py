"""items_measured: the run measured the agent on every item (its verdict is ERROR
otherwise: core/evaluation/result.py ``EvalResult.errors``)."""

from __future__ import annotations

from eval_pipeline.core.scoring.checks.spec import CheckSpec, register

register(CheckSpec(
    "items_measured", "run", blocking=True,
    description="Blocks. The run measured the agent on every item: no item failed for a "
    "reason outside the agent (a timeout, an HTTP error, a request the recordings cannot "
    "answer, a case that does not fit the agent) and no metric the verdict reads lacks a "
    "score because its evaluator failed. Otherwise the verdict is ERROR, never a pass.",
))  # fmt: skip
