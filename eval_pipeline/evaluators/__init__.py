"""Public evaluators. All follow the Langfuse evaluator calling convention.

What a project file may list under ``evaluators`` / ``run_evaluators`` is the registry
(registry.py): an evaluator is declared with ``@register`` in its module, and nothing else
lists it (``__all__`` below is checked against the built-in ones by a test). A project's own
evaluators are registered the same way, in a module its project file lists as a plugin.
"""

from eval_pipeline.evaluators.behavioural import (
    behavioural_overall,
    completeness,
    completeness_with,
    correctness,
    groundedness,
    overall_with,
)
from eval_pipeline.evaluators.declare import (
    Evaluator,
    RunEvaluator,
    Score,
    evaluator,
    evaluator_name,
    evaluator_version,
    run_evaluator,
)
from eval_pipeline.evaluators.llm_judge import llm_judge
from eval_pipeline.evaluators.registry import register
from eval_pipeline.evaluators.research import answer_correct, stepwise_score, survived_until
from eval_pipeline.evaluators.traces import cost_within, latency_within, no_error
from eval_pipeline.evaluators.trajectory import trajectory_match

__all__ = [
    "Evaluator",
    "RunEvaluator",
    "Score",
    "answer_correct",
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
    "overall_with",
    "register",
    "run_evaluator",
    "stepwise_score",
    "survived_until",
    "trajectory_match",
]
