"""Where eval_job's steps run: in the run worker's process, in processes of their own, or
in Kubernetes pods of their own.

- Locally (default): Dagster's ``multi_or_in_process_executor`` with one default changed
  (``local_executor``). A run of one shard that we start runs in the run worker's process
  (a process per step would add an interpreter start and a code load per step: ~3 s
  each); a run of several shards asks for ``multiprocess`` in its run config, so each
  shard step gets a process (``execution_config``). Step processes are forked from a
  server that has loaded the code location once (``forkserver``) unless the run config
  names a start method: a run of two shards took 71 s of CPU with a fresh interpreter per
  step (Dagster's default, ``spawn``), 25 s so; a test's two ``dagster asset
  materialize`` calls, 45–51 s and 37 s of the machine's CPU.
- ``EVAL_EXECUTOR=k8s``: dagster-k8s' ``k8s_job_executor``, every step a Kubernetes Job of
  its own, so a run's shards spread over nodes (docs/kubernetes.md). Needs the ``k8s``
  extra (``pip install 'eval-pipeline[k8s]'``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dagster import (
    AssetExecutionContext,
    Executor,
    ExecutorDefinition,
    InitExecutorContext,
    OpExecutionContext,
    executor,
    multi_or_in_process_executor,
)

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.evaluation import processes

EXECUTORS = ("local", "k8s")
IN_ONE_PROCESS = {"in_process", "execute_in_process_executor"}


@executor(
    name="eval_local_executor",
    config_schema=multi_or_in_process_executor.config_schema.as_field(),
    requirements=multi_or_in_process_executor.get_requirements,
)
def local_executor(init_context: InitExecutorContext) -> Executor:
    """Dagster's ``multi_or_in_process_executor``, its step processes forked by default."""
    module = getattr(init_context.job, "get_module", lambda: None)()
    config = steps_forked(dict(init_context.executor_config), module)
    create = multi_or_in_process_executor.executor_creation_fn
    assert create is not None  # (Dagster's decorator always sets it)
    return create(InitExecutorContext(
        job=init_context.job, executor_def=init_context.executor_def,
        executor_config=config, instance=init_context.instance,
    ))  # fmt: skip


def steps_forked(config: Mapping[str, Any], module: str | None) -> dict[str, Any]:
    """The executor config with step processes forked when it names no start method. The
    fork server imports the module the job was loaded from (``dagster ... -m
    eval_pipeline.definitions``: the code location, once), else our libraries and the ones
    an agent uses: never a module that builds definitions for a project it may not find."""
    chosen = config.get("multiprocess")
    if chosen is None or chosen.get("start_method"):
        return dict(config)
    preload = [module] if module else ["eval_pipeline.defs", *processes.PRELOAD]
    forked = {"forkserver": {"preload_modules": preload}}
    return {**config, "multiprocess": {**chosen, "start_method": forked}}


def executor_name() -> str:
    """EVAL_EXECUTOR, checked: `local` (the default) or `k8s`."""
    name = os.environ.get("EVAL_EXECUTOR") or "local"
    if name not in EXECUTORS:
        raise ConfigurationError(f"EVAL_EXECUTOR={name!r}: use one of {', '.join(EXECUTORS)}")
    return name


def eval_executor() -> ExecutorDefinition:
    """The executor EVAL_EXECUTOR names (read when the code location loads)."""
    if executor_name() == "local":
        return local_executor
    try:
        from dagster_k8s import k8s_job_executor
    except ImportError as exc:
        raise ImportError(
            "EVAL_EXECUTOR=k8s needs dagster-k8s: pip install 'eval-pipeline[k8s]'"
        ) from exc
    return k8s_job_executor


def execution_config(shards: int) -> dict[str, Any]:
    """The run config's `execution` part for a run expected to have ``shards`` shards:
    locally, in one process for one shard, a process per step for more; nothing (the
    executor's own defaults) under Kubernetes."""
    if executor_name() != "local":
        return {}
    if shards <= 1:
        return {"execution": {"config": {"in_process": {}}}}
    # Every shard at once (Dagster's default is one process per CPU): a shard mostly waits
    # for the model, and four shards on two cores beat two waves of two (BENCHMARKS.md).
    return {"execution": {"config": {"multiprocess": {"max_concurrent": shards}}}}


def separate_processes(context: OpExecutionContext) -> bool:
    """Whether this run's steps run in processes (or pods) of their own."""
    name = context.job_def.executor_def.name
    if name == local_executor.name:
        execution = context.run.run_config.get("execution")
        chosen = execution.get("config") if isinstance(execution, dict) else None
        return "in_process" not in (chosen or {})  # Dagster's default is multiprocess
    return name not in IN_ONE_PROCESS


# Dagster's run retries (deploy/dagster.yaml `run_retries`) re-execute a failed run from
# failure; a run tagged so is not retried when one of its steps failed.
NO_RETRY_TAGS = {"dagster/retry_on_asset_or_op_failure": "false"}


def not_to_be_retried(context: OpExecutionContext | AssetExecutionContext) -> None:
    """This run fails with its answer (its verdict, or a configuration problem): running it
    again would give the same. Dagster's run retries are for what is not the run's answer,
    such as a database outage or a dead worker."""
    context.instance.add_run_tags(context.run.run_id, NO_RETRY_TAGS)
