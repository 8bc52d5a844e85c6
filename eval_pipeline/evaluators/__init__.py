"""Public evaluators. All follow the Langfuse evaluator calling convention.

``BUILTIN`` and ``BUILTIN_RUN`` name what a project file may list under ``evaluators`` /
``run_evaluators``: each maps a name to a factory called with the entry's parameters
(``trajectory_match: {mode: unordered}``); an evaluator without parameters has a factory
that takes none. A new built-in evaluator is declared in its module and named here.
"""

from collections.abc import Callable

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


def _plain(fn: Evaluator) -> Callable[[], Evaluator]:
    def factory() -> Evaluator:
        return fn

    return factory


BUILTIN: dict[str, Callable[..., Evaluator]] = {
    "order_correctness": _plain(order_correctness),
    "tool_call_accuracy": _plain(tool_call_accuracy),
    "no_hallucinated_items": no_hallucinated_items,
    "groundedness": _plain(groundedness),
    "correctness": _plain(correctness),
    "completeness": completeness_with,
    "overall": overall_with,
    "trajectory_match": trajectory_match,
    "answer_correct": _plain(answer_correct),
    "stepwise_score": _plain(stepwise_score),
    "survived_until": _plain(survived_until),
    "tool_protocol": _plain(tool_protocol),
    "no_error": _plain(no_error),
    "latency_within": latency_within,
    "cost_within": cost_within,
    "llm_judge": llm_judge,
    "goal_completed": _plain(goal_completed),
    "turn_efficiency": _plain(turn_efficiency),
    "tool_protocol_every_turn": _plain(tool_protocol_every_turn),
    "no_hallucinated_items_any_turn": _plain(no_hallucinated_items_any_turn),
    "correction_honoured": _plain(correction_honoured),
}
BUILTIN_RUN: dict[str, Callable[..., RunEvaluator]] = {
    "avg_order_correctness": _plain(avg_order_correctness),
}

__all__ = [
    "BUILTIN",
    "BUILTIN_RUN",
    "Evaluator",
    "RunEvaluator",
    "Score",
    "answer_correct",
    "avg_order_correctness",
    "behavioural_overall",
    "completeness",
    "completeness_with",
    "correctness",
    "cost_within",
    "evaluator",
    "evaluator_name",
    "evaluator_version",
    "groundedness",
    "latency_within",
    "llm_judge",
    "no_error",
    "no_hallucinated_items",
    "order_correctness",
    "overall_with",
    "run_evaluator",
    "stepwise_score",
    "survived_until",
    "tool_call_accuracy",
    "tool_protocol",
    "trajectory_match",
]
