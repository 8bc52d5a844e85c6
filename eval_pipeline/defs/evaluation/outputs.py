"""agent_run_outputs: the agent's outputs of one evaluation run, produced in shards.

    plan_shards ─┬─ run_shard[shard_0] ─┬─ collect_outputs
                 ├─ run_shard[shard_1] ─┘      │
                 └─ run ───────────────────────┘

plan_shards records the run and yields one dynamic output per shard (core/running/
shards.py); each run_shard step (pool "llm") runs its shard's items with its share of the
run's concurrency and rate: a process of its own under the multiprocess executor, a pod
under dagster-k8s' k8s_job_executor (execution.py). collect_outputs checks that every item
has exactly one output and gives the asset its value and metadata. Re-executing a failed
run from failure re-runs only the shards that failed; they take the items they had
finished from the memo (the run id survives re-execution). A shard whose step left no
trace in Dagster's event log (its events lost in a database outage) is not re-run by
Dagster; collect_outputs runs it itself, in its own step, so re-execution recovers whatever
killed the shard.
"""

import copy
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetsDefinition,
    Config,
    DagsterInstance,
    DagsterRun,
    DynamicOut,
    DynamicOutput,
    In,
    Nothing,
    OpExecutionContext,
    Out,
    Output,
    PartitionsDefinition,
    config_mapping,
    graph_asset,
    op,
)
from pydantic import Field, create_model

from eval_pipeline import service
from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.prompts.labels import parse_version_key
from eval_pipeline.core.running.shards import Shard
from eval_pipeline.defs.evaluation.execution import not_to_be_retried, separate_processes
from eval_pipeline.defs.evaluation.metadata import outputs_metadata, progress_logger
from eval_pipeline.defs.evaluation.run_tags import tag_started
from eval_pipeline.defs.partitions import EvalPartition, plotted_per_suite
from eval_pipeline.defs.resources import (
    LLMResource,
    ResultsStoreResource,
    ServicesResource,
    environment,
)
from eval_pipeline.llm.provider_stats import PROVIDER_STATS
from eval_pipeline.llm.provider_stats import describe as describe_provider
from eval_pipeline.service import Environment, Prepared, RunRef, RunRequest


class _RunConfig(Config):
    if TYPE_CHECKING:  # its fields: RunOptions' and shards, added by create_model below

        def __getattr__(self, name: str) -> Any: ...

    def request(self, *, shards: int | None) -> RunOptions:
        return RunOptions(**(self.model_dump() | {"shards": shards}))


# Per-run knobs (Launchpad / run config / sensor and schedule run requests): the fields of
# core/options.py's RunOptions, their defaults, bounds and descriptions, declared there once.
# Only `shards` differs: a Dagster run splits by size unless told (the CLI: one process).
EvalRunConfig = create_model(
    "EvalRunConfig",
    __base__=_RunConfig,
    **{
        name: (f.annotation, copy.deepcopy(f))
        for name, f in RunOptions.model_fields.items()
        if name != "shards"
    },
    shards=(
        int,
        Field(
            0,
            ge=0,
            le=64,
            description=(
                "Steps the items are split over (a process or pod each). 0: one per 32 items in "
                "flight, at most one per 200 items; 1 when every step runs in one process."
            ),
        ),
    ),
)  # type: ignore[call-overload]


@dataclass(frozen=True)
class ShardTask:
    """What a run_shard step is given: the run (its pinned request and cases) and its shard."""

    run: RunRef
    shard: Shard


@dataclass(frozen=True)
class ShardReport:
    """What a shard did, for the collect step and the shard's own step metadata."""

    task: ShardTask
    items: int
    reused: int
    errors: int
    seconds: float
    peak_rss_mb: float
    provider: dict[str, int]


def eval_run_id(suite: str, version_key: str, dagster_run: DagsterRun) -> str:
    """Stable across Dagster re-executions (same root run): a re-executed run replaces its
    results and takes the items its crashed attempt completed from the memo."""
    root = dagster_run.root_run_id or dagster_run.run_id
    return f"{suite}-{version_key}-{root.replace('-', '')[:12]}"


def dagster_run_ended(instance: DagsterInstance,
                      current: str | None = None) -> Callable[[str], bool]:  # fmt: skip
    """Whether a Dagster run has ended, as this instance knows it (killed worker marked
    failed by run monitoring, or canceled; a run it does not know has ended too; the
    ``current`` run, asking, has not): what ``service.abandon_ended`` asks of the Dagster
    driver."""

    def ended(dagster_run_id: str) -> bool:
        if dagster_run_id == current:
            return False
        dagster_run = instance.get_run_by_id(dagster_run_id)
        return dagster_run is None or dagster_run.is_finished

    return ended


def request_of(context: OpExecutionContext, request: RunOptions) -> RunRequest:
    """The run this partition's step starts: its prompt version, ``request``, a run id that
    survives re-execution, and the Dagster run it belongs to."""
    suite, version_key = partition_keys(context)
    return RunRequest(suite, request, parse_version_key(version_key) or None,
                      run_id=eval_run_id(suite, version_key, context.run),
                      dagster_run_id=context.run.run_id)  # fmt: skip


def partition_keys(context: OpExecutionContext | AssetExecutionContext) -> tuple[str, str]:
    """The suite and the prompt version key ('v3') of the evaluation's partition."""
    partition = EvalPartition.parse(context.partition_key)
    return partition.suite, partition.version


@op(ins={"golden_dataset": In(Nothing)},
    out={"shards": DynamicOut(ShardTask), "run": Out(RunRef)})  # fmt: skip
def plan_shards(
    context: OpExecutionContext,
    config: EvalRunConfig,
    services: ServicesResource,
    llm: LLMResource,
    results_store: ResultsStoreResource,
):
    """Record the run (its cases, prompt, model, baseline) and split its items into shards."""
    env = environment(services, llm, results_store)
    suite_name, version_key = partition_keys(context)
    tag_started(context.instance, context.run.run_id, context.run.tags, suite_name, version_key)
    store = env.store()
    ended = dagster_run_ended(context.instance, context.run.run_id)
    for stale in service.abandon_ended(store, ended, suite=suite_name,
                                       prompt_version=version_key):  # fmt: skip
        context.log.warning(f"{stale} was abandoned by a run that ended; marked abandoned")
    in_processes = separate_processes(context)
    options = config.request(shards=config.shards or (None if in_processes else 1))
    try:
        prepared = service.prepare(env, request_of(context, options))
        service.choose_baseline(prepared)  # before any model call
    except ConfigurationError:
        not_to_be_retried(context)  # (the same configuration fails the same way)
        raise
    service.start(prepared)
    plan, run = prepared.plan, prepared.plan.run
    count = len(plan.shards)
    context.log.info(
        f"{run.run_id}: {len(plan.cases)} cases × {run.repeats} on {prepared.llm.model} "
        f"with {run.prompt_name or 'no prompt'} {run.prompt_version} ({run.prompt_hash}), "
        f"{count} shard(s) of {plan.shards[0].concurrency} in flight"
    )
    if count > 1 and not in_processes:
        context.log.warning(
            f"{count} shards in one process run one after another: launch with run config "
            "`execution: {config: {multiprocess: {}}}` to run them side by side"
        )
    ref = prepared.ref()  # each shard plans the run again: with the same count
    yield Output(ref, "run")
    for shard in plan.shards:
        yield DynamicOutput(ShardTask(ref, shard), mapping_key=f"shard_{shard.index}",
                            output_name="shards")  # fmt: skip


@op(pool="llm")
def run_shard(
    context: OpExecutionContext,
    task: ShardTask,
    services: ServicesResource,
    llm: LLMResource,
    results_store: ResultsStoreResource,
) -> Output[ShardReport]:
    """Run one shard's items (the memo answers what it can) with its share of the budget."""
    prepared = service.replan(environment(services, llm, results_store), task.run)
    report = produce_shard(context, prepared, task)
    metadata = {k: v for k, v in asdict(report).items() if k not in ("task", "provider")}
    metadata |= {"shard": task.shard.label, "concurrency": task.shard.concurrency}
    return Output(report, metadata=metadata)


def produce_shard(context: OpExecutionContext, prepared: Prepared, task: ShardTask) -> ShardReport:
    """One shard's items through the run service, and what it did."""
    label = f"{task.run.run_id} {task.shard.label}"
    before, started = PROVIDER_STATS.snapshot(), time.perf_counter()
    outputs = service.produce(prepared, shard=task.shard,
                              progress=progress_logger(context.log, label))  # fmt: skip
    provider = {}
    if prepared.llm.provider != "offline":  # every request the client sent
        provider = describe_provider(before, PROVIDER_STATS.snapshot())
    return ShardReport(
        task, items=len(outputs), reused=sum(1 for o in outputs if o.source_run_id),
        errors=sum(1 for o in outputs if o.error), seconds=time.perf_counter() - started,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        provider=provider,
    )  # fmt: skip


@op
def collect_outputs(
    context: OpExecutionContext,
    ref: RunRef,
    reports: list[ShardReport],
    results_store: ResultsStoreResource,
    services: ServicesResource,
    llm: LLMResource,
) -> Output[RunRef]:
    """Every item has exactly one output (else the run fails here, naming what is missing).
    A shard that reported nothing is run here first (``missing_shards``)."""
    env = environment(services, llm, results_store)
    reports = [*reports, *missing_shards(context, ref, reports, env)]
    store = results_store.open()
    run = store.get_run(ref.run_id)
    assert run is not None, f"run {ref.run_id} was recorded by plan_shards"
    outputs = service.check_produced(store, ref)
    found = services.get()
    metadata = outputs_metadata(run, outputs)
    provider: dict[str, int] = {}
    for report in reports:
        for key, value in report.provider.items():
            provider[key] = provider.get(key, 0) + value
    metadata |= {f"provider_{k}": v for k, v in provider.items()}
    metadata |= {"shards": len(reports),
                 "peak_rss_mb_per_shard": max(r.peak_rss_mb for r in reports)}  # fmt: skip
    metadata["prompt_registry"] = found.registry().description
    metadata["langfuse"] = found.description
    return Output(ref, metadata=plotted_per_suite(run.suite, metadata))


def missing_shards(context: OpExecutionContext, ref: RunRef, reports: list[ShardReport],
                   env: Environment) -> list[ShardReport]:  # fmt: skip
    """The shards of the run with no report, run now, in this step. A re-execution from
    failure re-runs the shard steps that failed or were cut off; a shard step whose events
    never reached Dagster's event log (a database outage as it started or failed) is neither,
    so Dagster gives this step no report of it. Its items come from the memo as far as it
    got."""
    reported = {r.task.shard.index for r in reports}
    prepared = service.replan(env, ref)
    found = []
    for shard in prepared.plan.shards:
        if shard.index in reported:
            continue
        context.log.warning(f"{ref.run_id} {shard.label}: its step left no output in this "
                            "run or the one it re-executes (its events were lost, e.g. in a "
                            "database outage); running it here")  # fmt: skip
        found.append(produce_shard(context, prepared, ShardTask(ref, shard)))
    return found


@config_mapping
def _run_config(config: EvalRunConfig) -> dict[str, Any]:
    """The run config stays `ops: {agent_run_outputs: {config: …}}`: it goes to plan_shards."""
    return {"plan_shards": {"config": config.model_dump()}}


def build_agent_run_outputs(
    partitions_def: PartitionsDefinition, golden_dataset: AssetIn, group: str
) -> AssetsDefinition:
    @graph_asset(
        group_name=group,
        partitions_def=partitions_def,
        ins={"golden_dataset": golden_dataset},  # lineage only (Nothing): no data is loaded
        config=_run_config,
        description="Run the agent with this partition's prompt version on every case of "
        "the tier, split into shards (steps of their own) under one budget.",
    )
    def agent_run_outputs(golden_dataset):
        shards, ref = plan_shards(golden_dataset)
        return collect_outputs(ref, shards.map(run_shard).collect())

    return agent_run_outputs
