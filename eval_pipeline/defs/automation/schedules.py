"""nightly_full_eval: every night, each suite's production prompt version, full tier."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dagster import (
    DagsterInstance,
    DefaultScheduleStatus,
    RunsFilter,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from eval_pipeline.defs.automation.common import env_setting, eval_run_request, watched_prompts
from eval_pipeline.defs.partitions import EvalPartition, add_partitions
from eval_pipeline.defs.resources import ServicesResource, SuitesResource
from eval_pipeline.integrations.prompt_registry import RegistryUnavailable

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )

NIGHTLY_CRON = env_setting("EVAL_NIGHTLY_CRON", "0 2 * * *")
NIGHTLY_TIMEZONE = env_setting("EVAL_NIGHTLY_TIMEZONE", "UTC")
PRODUCTION_LABEL = "production"
TRIGGER = "nightly_full_eval"


def ran_on(instance: DagsterInstance, day: str, suite: str) -> bool:
    """Whether the nightly already ran ``suite`` on ``day``: once a day means once. (A
    schedule's run key dedupes only the ticks of one scheduled time: a second tick on the
    same day, a changed cron or timezone, started every suite again.)"""
    tags = {"eval/trigger": TRIGGER, "eval/date": day, "eval/suite": suite}
    return bool(instance.get_run_records(RunsFilter(tags=tags), limit=1))


def build_nightly_full_eval(eval_job: UnresolvedAssetJobDefinition) -> ScheduleDefinition:
    @schedule(
        job=eval_job,
        cron_schedule=NIGHTLY_CRON,
        execution_timezone=NIGHTLY_TIMEZONE,
        default_status=DefaultScheduleStatus.RUNNING,
        description="Full-tier evaluation of every suite's production prompt version "
        "(suite repeats, fresh model calls); once a day: a suite the nightly already ran on "
        "that date is skipped.",
    )
    def nightly_full_eval(
        context: ScheduleEvaluationContext,
        services: ServicesResource,
        suites: SuitesResource,
    ):
        registry = services.registry()
        try:
            snapshot = registry.label_versions([PRODUCTION_LABEL])
        except RegistryUnavailable as exc:
            return SkipReason(f"prompt registry {registry.description} unavailable: {exc}")
        day = context.scheduled_execution_time.date().isoformat()
        wanted = []
        for w in watched_prompts(suites):
            version = snapshot.get(w.prompt_name, {}).get(PRODUCTION_LABEL)
            if version is None:
                context.log.warning(f"{w.suite}: prompt {w.prompt_name} has no production label")
            else:
                wanted.append((w, f"v{version}"))
        done = [w.suite for w, _ in wanted if ran_on(context.instance, day, w.suite)]
        wanted = [(w, v) for w, v in wanted if w.suite not in done]
        if done:
            context.log.info(f"already ran on {day}: {', '.join(done)}")
        if not wanted:
            return SkipReason(f"every suite already ran on {day}" if done
                              else "no suite has a production prompt version")  # fmt: skip
        # schedules cannot return partition requests: add them directly
        add_partitions(context.instance, [EvalPartition(w.suite, v) for w, v in wanted])
        return [
            eval_run_request(
                suites,
                w.suite,
                version,
                "full",
                cache="refresh",  # the nightly run is the fresh measurement: no memoized items
                run_key=f"nightly:{day}:{w.suite}",
                tags={
                    "eval/trigger": TRIGGER,
                    "eval/suite": w.suite,
                    "eval/prompt": w.prompt_name,
                    "eval/label": PRODUCTION_LABEL,
                    "eval/to_version": version,
                    "eval/tier": "full",
                    "eval/cache": "refresh",
                    "eval/date": day,
                },
            )
            for w, version in wanted
        ]

    return nightly_full_eval
