"""Public evaluators. All follow the Langfuse evaluator calling convention."""

from eval_pipeline.evaluators.behavioural import (
    behavioural_overall,
    completeness,
    correctness,
    groundedness,
)
from eval_pipeline.evaluators.drive_thru import (
    avg_order_correctness,
    no_hallucinated_items,
    order_correctness,
    tool_call_accuracy,
)
from eval_pipeline.evaluators.judge import llm_judge
from eval_pipeline.evaluators.traces import cost_within, latency_within, no_error, tool_protocol
from eval_pipeline.evaluators.trajectory import trajectory_match

__all__ = [
    "avg_order_correctness",
    "behavioural_overall",
    "completeness",
    "correctness",
    "cost_within",
    "groundedness",
    "latency_within",
    "llm_judge",
    "no_error",
    "no_hallucinated_items",
    "order_correctness",
    "tool_call_accuracy",
    "tool_protocol",
    "trajectory_match",
]
