"""Public evaluators. All follow the Langfuse evaluator calling convention.

What a project file may list under ``evaluators`` / ``run_evaluators`` is the registry
(registry.py): a built-in evaluator is declared with ``@builtin`` in its module, and
nothing else lists it (``__all__`` below is checked against the registry by a test).
"""

from eval_pipeline.evaluators.base import (
    Evaluator,
    RunEvaluator,
    Score,
    evaluator,
    evaluator_name,
    evaluator_version,
    run_evaluator,
)
from eval_pipeline.evaluators.behavioural import (
    behavioural_overall,
    completeness,
    completeness_with,
    correctness,
    groundedness,
    overall_with,
)
from eval_pipeline.evaluators.conversation import (
    correction_honoured,
    goal_completed,
    no_hallucinated_items_any_turn,
    tool_protocol_every_turn,
    turn_efficiency,
)
from eval_pipeline.evaluators.drive_thru import (
    avg_order_correctness,
    no_hallucinated_items,
    order_correctness,
    tool_call_accuracy,
)
from eval_pipeline.evaluators.judge import llm_judge
from eval_pipeline.evaluators.research import answer_correct, stepwise_score, survived_until
from eval_pipeline.evaluators.traces import cost_within, latency_within, no_error, tool_protocol
from eval_pipeline.evaluators.trajectory import trajectory_match

__all__ = [
    "Evaluator",
    "RunEvaluator",
    "Score",
    "answer_correct",
    "avg_order_correctness",
    "behavioural_overall",
    "completeness",
    "completeness_with",
    "correction_honoured",
    "correctness",
    "cost_within",
    "evaluator",
    "evaluator_name",
    "evaluator_version",
    "goal_completed",
    "groundedness",
    "latency_within",
    "llm_judge",
    "no_error",
    "no_hallucinated_items",
    "no_hallucinated_items_any_turn",
    "order_correctness",
    "overall_with",
    "run_evaluator",
    "stepwise_score",
    "survived_until",
    "tool_call_accuracy",
    "tool_protocol",
    "tool_protocol_every_turn",
    "trajectory_match",
    "turn_efficiency",
]
