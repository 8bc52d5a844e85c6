"""prompt_label_sensor: a moved prompt label starts an evaluation of that exact version."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dagster import (
    DefaultSensorStatus,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from eval_pipeline.core.prompts.label_moves import SensorCursor, current_state, plan_requests
from eval_pipeline.defs.automation.common import env_setting, eval_run_request, watched_prompts
from eval_pipeline.defs.partitions import EvalPartition, evaluation_partitions, missing_partitions
from eval_pipeline.defs.resources import ResultsStoreResource, ServicesResource, SuitesResource
from eval_pipeline.integrations.prompt_registry import RegistryUnavailable

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )

SENSOR_INTERVAL_S = int(env_setting("EVAL_SENSOR_INTERVAL_S", "60"))


def build_prompt_label_sensor(eval_job: UnresolvedAssetJobDefinition) -> SensorDefinition:
    @sensor(
        job=eval_job,
        minimum_interval_seconds=SENSOR_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="Polls the prompt registry; a watched label that moved requests an evaluation "
        "of the version it now points to (production: full tier, other labels: smoke).",
    )
    def prompt_label_sensor(
        context: SensorEvaluationContext,
        services: ServicesResource,
        suites: SuitesResource,
        results_store: ResultsStoreResource,
    ) -> SensorResult | SkipReason:
        registry = services.registry()
        watched = watched_prompts(suites)
        try:
            snapshot = registry.label_versions({label for w in watched for label in w.labels})
        except RegistryUnavailable as exc:
            return SkipReason(f"prompt registry {registry.description} unavailable: {exc}")
        previous = SensorCursor.loads(context.cursor)
        store = results_store.open()

        def evaluated(suite: str, version: int, tier: str) -> bool:
            runs = store.list_runs(suite=suite, prompt_version=f"v{version}", status="complete")
            return any(r.tier in (tier, "full") for r in runs)

        state = current_state(watched, snapshot)
        requests, cursor = plan_requests(previous, state, watched, evaluated=evaluated)
        # Every labelled version of a suite's prompt is a partition of that suite, evaluated
        # already (from the CLI) or not: its assets can be materialized from the UI and its
        # checks read per partition. Other suites get none (their prompts have other versions).
        labelled = [EvalPartition(suite, f"v{v}")
                    for suite, by_label in state.items() for v in by_label.values()]  # fmt: skip
        new_partitions = missing_partitions(
            context.instance,
            [*labelled, *(EvalPartition(r.suite, r.partition_version) for r in requests)],
        )
        for r in requests:
            context.log.info(f"{r.suite}: {', '.join(map(str, r.moves))} → {r.tier} run")
        return SensorResult(
            run_requests=[
                eval_run_request(
                    suites,
                    r.suite,
                    r.partition_version,
                    r.tier,
                    run_key=r.run_key,
                    tags=r.tags(),
                )
                for r in requests
            ],
            dynamic_partitions_requests=(
                [evaluation_partitions.build_add_request(new_partitions)] if new_partitions else []
            ),
            cursor=cursor.dumps(),
            skip_reason=None if requests else f"no watched label moved ({registry.description})",
        )

    return prompt_label_sensor
