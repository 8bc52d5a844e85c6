"""production_traces_daily: yesterday's production traces of every suite, each morning."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from dagster import (
    DefaultScheduleStatus,
    MultiPartitionKey,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    schedule,
)

from eval_pipeline.defs.automation.common import env_setting
from eval_pipeline.defs.resources import SuitesResource

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )

TRACES_CRON = env_setting("EVAL_TRACES_CRON", "0 3 * * *")


def build_traces_schedule(traces_job: UnresolvedAssetJobDefinition) -> ScheduleDefinition:
    @schedule(
        job=traces_job,
        cron_schedule=TRACES_CRON,
        execution_timezone="UTC",
        default_status=DefaultScheduleStatus.RUNNING,
        description="Sample, score and mine the previous UTC day's production traces, per suite.",
    )
    def production_traces_daily(context: ScheduleEvaluationContext, suites: SuitesResource):
        day = (context.scheduled_execution_time - timedelta(days=1)).date().isoformat()
        for suite, config in suites.project_file().config.suites.items():
            if not config.trace_name:
                continue  # no production traces for this agent
            yield RunRequest(
                run_key=f"traces:{day}:{suite}",
                partition_key=MultiPartitionKey({"day": day, "suite": suite}),
                tags={
                    "eval/trigger": "production_traces_daily",
                    "eval/suite": suite,
                    "eval/day": day,
                },
            )

    return production_traces_daily
