"""production_traces_daily: yesterday's production traces of every suite, each morning."""

from datetime import timedelta

from dagster import (
    DefaultScheduleStatus,
    MultiPartitionKey,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

from eval_pipeline.agents.registry import SUITE_NAMES, get_suite
from eval_pipeline.defs.automation.common import env_setting
from eval_pipeline.defs.traces.assets import golden_candidates, production_traces, trace_scores

TRACES_CRON = env_setting("EVAL_TRACES_CRON", "0 3 * * *")

traces_job = define_asset_job(
    "traces_job", selection=[production_traces, trace_scores, golden_candidates]
)


@schedule(
    job=traces_job,
    cron_schedule=TRACES_CRON,
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Sample, score and mine the previous UTC day's production traces, per suite.",
)
def production_traces_daily(context: ScheduleEvaluationContext):
    day = (context.scheduled_execution_time - timedelta(days=1)).date().isoformat()
    for suite in SUITE_NAMES:
        if not get_suite(suite).trace_name:
            continue  # no production traces for this agent
        yield RunRequest(
            run_key=f"traces:{day}:{suite}",
            partition_key=MultiPartitionKey({"day": day, "suite": suite}),
            tags={"eval/trigger": "production_traces_daily", "eval/suite": suite, "eval/day": day},
        )
