"""The run service, written once for every driver (service/run.py): prepare a run, choose
its baseline, start it, produce, check what it produced, score, conclude, finish. The CLI
and ``evaluate()`` drive it in this process (``run_in_process``); the Dagster assets drive
it a step at a time."""

from eval_pipeline.service.environment import Environment
from eval_pipeline.service.run import (
    Finished,
    Prepared,
    RecordingPlan,
    RunRef,
    RunRequest,
    ShardWorker,
    abandon_ended,
    check_produced,
    choose_baseline,
    conclude,
    finish,
    prepare,
    produce,
    replan,
    run_in_process,
    score,
    scored_cases,
    start,
    write_back,
)

__all__ = [
    "Environment",
    "Finished",
    "Prepared",
    "RecordingPlan",
    "RunRef",
    "RunRequest",
    "ShardWorker",
    "abandon_ended",
    "check_produced",
    "choose_baseline",
    "conclude",
    "finish",
    "prepare",
    "produce",
    "replan",
    "run_in_process",
    "score",
    "scored_cases",
    "start",
    "write_back",
]
