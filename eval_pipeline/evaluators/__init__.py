"""Public evaluators. All follow the Langfuse evaluator calling convention."""

from eval_pipeline.evaluators.drive_thru import (
    avg_order_correctness,
    no_hallucinated_items,
    order_correctness,
    tool_call_accuracy,
)

__all__ = [
    "avg_order_correctness",
    "no_hallucinated_items",
    "order_correctness",
    "tool_call_accuracy",
]
