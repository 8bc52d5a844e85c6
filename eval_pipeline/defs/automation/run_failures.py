"""evaluation_run_failed: the results store follows Dagster's run status. A failed eval_job
run that Dagster will not retry leaves no evaluation run ``running`` in the store: its row
is marked ``abandoned`` (what it finished kept), by the run service's one abandonment
(``service.abandon_ended``), as soon as the daemon sees the failure rather than when the
partition next runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dagster import (
    DefaultSensorStatus,
    RunFailureSensorContext,
    SensorDefinition,
    SkipReason,
    run_failure_sensor,
)

from eval_pipeline import service
from eval_pipeline.defs.automation.sensors import SENSOR_INTERVAL_S
from eval_pipeline.defs.evaluation.outputs import dagster_run_ended
from eval_pipeline.defs.partitions import EvalPartition
from eval_pipeline.defs.resources import ResultsStoreResource

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )

def build_run_failure_sensor(eval_job: UnresolvedAssetJobDefinition) -> SensorDefinition:
    @run_failure_sensor(
        monitored_jobs=[eval_job],
        minimum_interval_seconds=SENSOR_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="A failed evaluation run that Dagster will not retry is marked abandoned "
        "in the results store (what it finished kept), never left running.",
    )
    def evaluation_run_failed(
        context: RunFailureSensorContext, results_store: ResultsStoreResource
    ) -> SkipReason | None:
        run = context.instance.get_run_by_id(context.dagster_run.run_id) or context.dagster_run
        if run.tags.get("dagster/will_retry") == "true":
            return SkipReason(f"{run.run_id} failed; Dagster retries it (the evaluation run "
                              "goes on)")  # fmt: skip
        key = run.tags.get("dagster/partition")
        if key is None:
            return SkipReason(f"{run.run_id} has no partition")
        partition = EvalPartition.parse(key)
        abandoned = service.abandon_ended(results_store.open(), dagster_run_ended(context.instance),
                                          suite=partition.suite,
                                          prompt_version=partition.version)  # fmt: skip
        for run_id in abandoned:
            context.log.info(f"{run_id}: its Dagster run {run.run_id} failed; marked abandoned")
        return None

    return evaluation_run_failed
