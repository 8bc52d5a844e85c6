"""Re-execution from failure after a shard step died without a trace in Dagster's event
log, as in a Postgres outage: Dagster neither re-runs that shard nor has its output, and
before, collect_outputs failed on `reports[0]` (IndexError) on every re-execution. Now the
collect step runs the missing shard itself, and the run recovers with one verdict."""

from __future__ import annotations

import pytest
from dagster import (
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    ReexecutionOptions,
    execute_job,
    reconstructable,
)
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable

from eval_pipeline import service
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.defs.partitions import EvalPartition, add_partitions
from eval_pipeline_tests.helpers import CONFIG_ENV

SUITE, VERSION = "research", "v1"


@pytest.fixture
def instance(tmp_path, monkeypatch):
    for var in CONFIG_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    (tmp_path / "dagster").mkdir()
    with DagsterInstance.get() as instance:
        yield instance


def forget_steps(instance: DagsterInstance, run_id: str, step: str) -> None:
    """Drop a step's events from the run's event log: what an outage leaves of a step that
    could not write them."""
    table = SqlEventLogStorageTable
    with instance.event_log_storage.run_connection(run_id) as conn:
        conn.execute(table.delete().where(table.c.step_key.like(f"%{step}%")))


def test_reexecution_from_failure_runs_a_shard_that_left_no_trace(instance, monkeypatch):
    # (imported here, under this test's EVAL_HOME: the code location's store is there)
    from eval_pipeline_tests.crash_target import defs, eval_job, partition_tags, run_config

    add_partitions(instance, [EvalPartition(SUITE, VERSION)])

    def outage(*_, **__):
        raise ConnectionError("server closed the connection unexpectedly")

    with monkeypatch.context() as patched:
        patched.setattr(service, "produce", outage)
        first = execute_job(reconstructable(eval_job), instance, run_config=run_config(1),
                            tags=partition_tags(SUITE, VERSION))  # fmt: skip
    assert not first.success
    forget_steps(instance, first.run_id, "run_shard")
    parent = instance.get_run_by_id(first.run_id)
    assert parent.status == DagsterRunStatus.FAILURE

    options = ReexecutionOptions.from_failure(parent.run_id, instance)
    again = execute_job(reconstructable(eval_job), instance, tags=parent.tags,
                        reexecution_options=options)  # fmt: skip
    assert again.success, [e.message for e in again.all_events if e.is_failure]
    steps = {r.dagster_event.step_key for r in instance.all_logs(
        again.run_id, of_type=DagsterEventType.STEP_START)}  # fmt: skip
    assert "agent_run_outputs.plan_shards" not in steps  # Dagster re-ran no shard step …
    assert not any("run_shard" in s for s in steps)
    warnings = [r.user_message for r in instance.all_logs(again.run_id)
                if "left no output" in r.user_message]  # fmt: skip
    assert len(warnings) == 1 and "shard 1/1" in warnings[0]  # … collect_outputs ran it

    with ResultsStore(defs.resources["results_store"].url) as store:
        (run,) = store.list_runs()  # one evaluation run: the re-execution continued it
        assert run.status == "complete" and store.read_verdict(run.run_id) is not None
        outputs = store.read_outputs(run.run_id)
        assert store.read_summary(run.run_id).n_items == len(outputs) > 0
        assert len({(o.item_id, o.repeat) for o in outputs}) == len(outputs)
    (summary,) = instance.fetch_materializations(AssetKey("eval_summary"), limit=10).records
    assert summary.run_id == again.run_id
