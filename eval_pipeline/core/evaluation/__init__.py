"""One evaluation, in stages shared by every driver (the CLI and ``evaluate()`` through
``eval_pipeline/service``, the Dagster assets through the same service):

plan (what runs, against which baseline; writes nothing) → produce (agent calls, memo) →
score (evaluators) → summarise (aggregates; the run is complete) → verdict (thresholds
and the regression gate) → the sequential continuation (more cases while the gate cannot
tell).

| module | holds |
|---|---|
| ``plan`` | the run's plan: cases, record, shards; the draw order of further cases |
| ``baseline`` | the baseline, chosen when the run is planned |
| ``stages`` | produce, score, summarise, verdict |
| ``continuation`` | the sequential continuation and variance-aware repeats |
| ``processes`` | shards in worker processes of this machine |
| ``result`` | ``EvalResult``: what a run says, and its exit code |
| ``conclusion`` | ``conclude``: what follows scoring |

The stages are put in order in one place only: the run service (service/run.py).
"""

from eval_pipeline.core.evaluation.baseline import (
    BaselineMissing,
    Labels,
    baseline_data,
    decided_baseline,
    with_baseline,
)
from eval_pipeline.core.evaluation.conclusion import conclude
from eval_pipeline.core.evaluation.continuation import (
    Repeats,
    go_on_until_decided,
    goes_on,
    runs_short,
)
from eval_pipeline.core.evaluation.plan import (
    FAILURES_TIER,
    RunPlan,
    cases_of_run,
    cases_run,
    draw_order,
    new_run_id,
    plan,
    prompt_key,
)
from eval_pipeline.core.evaluation.processes import (
    ShardEntry,
    ShardUpdates,
    produce_in_processes,
    shard_progress,
)
from eval_pipeline.core.evaluation.result import EvalResult, SequentialReport, Verdict
from eval_pipeline.core.evaluation.stages import (
    check_complete,
    failure_recorded,
    judge_settings,
    produce,
    score,
    settle,
    summarise,
    verdict,
)

__all__ = [
    "FAILURES_TIER",
    "BaselineMissing",
    "EvalResult",
    "Labels",
    "Repeats",
    "RunPlan",
    "SequentialReport",
    "ShardEntry",
    "ShardUpdates",
    "Verdict",
    "baseline_data",
    "cases_of_run",
    "cases_run",
    "check_complete",
    "conclude",
    "decided_baseline",
    "draw_order",
    "failure_recorded",
    "go_on_until_decided",
    "goes_on",
    "judge_settings",
    "new_run_id",
    "plan",
    "produce",
    "produce_in_processes",
    "prompt_key",
    "runs_short",
    "score",
    "settle",
    "shard_progress",
    "summarise",
    "verdict",
    "with_baseline",
]
