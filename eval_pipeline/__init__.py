"""eval-pipeline: evaluate LLM agents continuously, as Dagster assets, from the CLI, or from
Python with ``evaluate`` (see eval_pipeline/api.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eval_pipeline.core.evaluation import EvalResult

__all__ = ["evaluate"]


def evaluate(suite: str, **options: Any) -> EvalResult:
    """Evaluate a suite of the project file and gate it (see ``eval_pipeline.api.evaluate``
    for the options). Imported on first use: ``import eval_pipeline`` stays cheap."""
    from eval_pipeline.api import evaluate as run

    return run(suite, **options)
