"""Runs of our jobs that belong to their code location, executed in this process.

``JobDefinition.execute_in_process`` makes runs that belong to no code location: the
Dagster UI's Overview timeline and a job's Runs tab never show them (the demo's 15 runs
were on the Runs page only). Here the code location is loaded in this process, under the
name ``dagster dev -w workspace.yaml`` gives it (the module's name), each run is created
from its job there, as the UI's launcher creates one (its origin, snapshots and
``dagster/code_location`` tag), and executed here with the in-process executor, without
the run queue (nothing else would take it from the queue)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dagster import DagsterInstance, DagsterRun
from dagster._core.execution.api import execute_run
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._utils.hosted_user_process import recon_job_from_origin

MODULE = "eval_pipeline.definitions"
IN_PROCESS: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}


class LocatedJobs:
    """The jobs of our code location (loaded once), runnable as the UI runs them."""

    def __init__(self, instance: DagsterInstance, context: Any):
        self.instance = instance
        self.location = context.create_request_context().get_code_location(MODULE)
        self.repository = next(iter(self.location.get_repositories().values()))

    def run(self, job_name: str, partition_key: str, run_config: Mapping[str, Any],
            tags: Mapping[str, str]) -> DagsterRun:  # fmt: skip
        """Execute ``job_name`` on one partition here; the finished run."""
        remote = self.repository.get_full_job(job_name)
        recon = recon_job_from_origin(remote.get_python_origin())
        config = {**run_config, **IN_PROCESS}
        partition_tags = recon.get_definition().get_tags_for_partition_key(partition_key, None)
        plan = self.location.get_execution_plan(
            remote, config, step_keys_to_execute=None, known_state=None, instance=self.instance
        )
        run = self.instance.create_run(
            job_name=remote.name, run_id=None, run_config=config, resolved_op_selection=None,
            step_keys_to_execute=plan.execution_plan_snapshot.step_keys_to_execute,
            op_selection=None, status=None, root_run_id=None, parent_run_id=None,
            tags={**remote.tags, **partition_tags, **tags}, job_snapshot=remote.job_snapshot,
            execution_plan_snapshot=plan.execution_plan_snapshot,
            parent_job_snapshot=remote.parent_job_snapshot,
            remote_job_origin=remote.get_remote_origin(),
            job_code_origin=remote.get_python_origin(), asset_selection=None,
            asset_check_selection=None, asset_graph=self.repository.asset_graph,
        )  # fmt: skip
        execute_run(recon, run, self.instance)
        return self.instance.get_run_by_id(run.run_id) or run


@contextmanager
def located_jobs(instance: DagsterInstance, working_directory: Path) -> Iterator[LocatedJobs]:
    """The code location, loaded afresh from this process's environment, as ``dagster dev``
    would load it (an earlier import in this process may have read another one)."""
    sys.modules.pop(MODULE, None)
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(module_name=MODULE, working_directory=str(working_directory)),
        location_name=MODULE,
    )
    with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as context:
        yield LocatedJobs(instance, context)
