"""Re-execution from failure after a shard step died without a trace in Dagster's event
log, as in a Postgres outage: Dagster neither re-runs that shard nor has its output, and
before, collect_outputs failed on `reports[0]` (IndexError) on every re-execution. Now the
collect step runs the missing shard itself, and the run recovers with one verdict. A
failed run Dagster will not retry is not left `running` in the store."""

from __future__ import annotations

import pytest
from dagster import (
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    ReexecutionOptions,
    build_run_status_sensor_context,
    execute_job,
    reconstructable,
)
from dagster._core.definitions.reconstruct import ReconstructableJob
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable

from eval_pipeline import service
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.defs.partitions import EvalPartition, add_partitions
from eval_pipeline_tests.crash_target import definitions, eval_job, partition_tags, run_config
from eval_pipeline_tests.helpers import CONFIG_ENV, EXAMPLES

SUITE, VERSION = "research", "v1"


@pytest.fixture
def instance(tmp_path, monkeypatch):
    for var in CONFIG_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    monkeypatch.setenv("EVAL_HOME", str(tmp_path / "home"))  # the store: this test's own
    monkeypatch.setenv("EVAL_PROJECT", str(EXAMPLES / "eval-pipeline.yaml"))
    # Dagster keeps the last reconstructed job per process (an lru_cache on the job's
    # pointer, the same in every test): a job built under another test's settings would
    # write to that test's store.
    ReconstructableJob.get_definition.cache_clear()
    ReconstructableJob.get_repository_definition.cache_clear()
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

    with ResultsStore(definitions().resources["results_store"].url) as store:
        (run,) = store.list_runs()  # one evaluation run: the re-execution continued it
        assert run.dagster_run_id == first.run_id
        assert run.status == "complete" and store.read_verdict(run.run_id) is not None
        outputs = store.read_outputs(run.run_id)
        assert store.read_summary(run.run_id).n_items == len(outputs) > 0
        assert len({(o.item_id, o.repeat) for o in outputs}) == len(outputs)
    (summary,) = instance.fetch_materializations(AssetKey("eval_summary"), limit=10).records
    assert summary.run_id == again.run_id


def failure_event(instance: DagsterInstance, run_id: str):
    (record,) = instance.all_logs(run_id, of_type=DagsterEventType.RUN_FAILURE)
    return record.dagster_event


def test_a_failed_run_dagster_will_not_retry_is_not_left_running(instance, monkeypatch):
    """Before, the store's row of a failed Dagster run stayed `running` until a later run of
    the partition marked it abandoned. The evaluation_run_failed sensor marks it as soon as
    the daemon sees the failure, unless Dagster retries the run (then the evaluation run goes
    on); a configuration problem or a verdict tags its run not to be retried."""
    add_partitions(instance, [EvalPartition(SUITE, VERSION), EvalPartition(SUITE, "v99")])
    with monkeypatch.context() as patched:
        patched.setattr(service, "produce", lambda *_, **__: 1 / 0)
        failed = execute_job(reconstructable(eval_job), instance, run_config=run_config(1),
                             tags=partition_tags(SUITE, VERSION))  # fmt: skip
    run = instance.get_run_by_id(failed.run_id)
    assert run.status == DagsterRunStatus.FAILURE
    assert "dagster/retry_on_asset_or_op_failure" not in run.tags  # a fault: retried
    defs = definitions()
    store = ResultsStore(defs.resources["results_store"].url)
    (row,) = store.list_runs()
    assert row.dagster_run_id == run.run_id
    assert row.status == "running"

    sensor = defs.get_sensor_def("evaluation_run_failed")

    def tick(dagster_run):
        context = build_run_status_sensor_context(
            sensor_name=sensor.name, dagster_event=failure_event(instance, dagster_run.run_id),
            dagster_instance=instance, dagster_run=dagster_run,
            resources={"results_store": defs.resources["results_store"]},
        ).for_run_failure()  # fmt: skip
        return sensor(context)

    instance.add_run_tags(run.run_id, {"dagster/will_retry": "true"})
    skipped = tick(instance.get_run_by_id(run.run_id))
    assert "Dagster retries it" in skipped.skip_message
    assert store.get_run(row.run_id).status == "running"  # the retry goes on with it
    instance.add_run_tags(run.run_id, {"dagster/will_retry": "false"})
    tick(instance.get_run_by_id(run.run_id))
    marked = store.get_run(row.run_id)
    assert marked.status == "abandoned" and run.run_id in (marked.error or "")

    wrong = execute_job(reconstructable(eval_job), instance, run_config=run_config(1),
                        tags=partition_tags(SUITE, "v99"))  # a version that does not exist
    assert not wrong.success
    tags = instance.get_run_by_id(wrong.run_id).tags
    assert tags["dagster/retry_on_asset_or_op_failure"] == "false"  # its answer: not retried
