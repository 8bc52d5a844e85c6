"""Production deployment on one machine: deploy/dagster.yaml on a real Postgres, the daemon
and the webserver as real processes. The sensor and the nightly schedule tick by
themselves; the queued runs complete concurrently, within the queue limits, on Postgres."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack, suppress
from pathlib import Path

import pytest
import yaml
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter

from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import ROOT, copy_project
from eval_pipeline_tests.model_server import LocalOpenAIServer
from eval_pipeline_tests.pg import dagster_pg_env, fresh_database

BIN = Path(sys.executable).parent
DONE = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def overlap(intervals: list[tuple[float, float]]) -> int:
    """Largest number of intervals that are open at the same moment."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    best = current = 0
    for _, step in events:
        current += step
        best = max(best, current)
    return best


def graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.load(response)
    assert not body.get("errors"), body["errors"]
    return body["data"]


def failure_causes(instance: DagsterInstance, run_id: str) -> set[str]:
    """Exception classes of a run's failed steps."""
    events = instance.all_logs(run_id, of_type=DagsterEventType.STEP_FAILURE)
    return {e.dagster_event.step_failure_data.error.cls_name for e in events}


def stop_schedule(port: int, name: str) -> None:
    """Turn a schedule off through the webserver's GraphQL API (the UI's toggle)."""
    selector = (
        '{repositoryLocationName: "eval_pipeline.definitions", '
        f'repositoryName: "__repository__", scheduleName: "{name}"}}'
    )
    found = graphql(port, f"{{ scheduleOrError(scheduleSelector: {selector}) "
                          "{ __typename ... on Schedule { scheduleState { id } } } }")  # fmt: skip
    state_id = found["scheduleOrError"]["scheduleState"]["id"]
    stopped = graphql(port, f'mutation {{ stopRunningSchedule(id: "{state_id}") '
                            "{ __typename ... on ScheduleStateResult "
                            "{ scheduleState { status } } } }")  # fmt: skip
    assert stopped["stopRunningSchedule"]["scheduleState"]["status"] == "STOPPED", stopped


# Three of the examples' five suites: nine runs (each suite's production and staging by the
# sensor, then the nightly's), more than the provider's limit of four at once, at 60% of
# the CPU of all five (each run is a run worker of its own).
SUITES = ("drive_thru", "order_management", "research")


def three_suites(tmp_path: Path) -> Path:
    """A copy of the examples' project with only ``SUITES``."""
    project = copy_project(tmp_path)
    config = yaml.safe_load(project.read_text())
    config["suites"] = {name: config["suites"][name] for name in SUITES}
    project.write_text(yaml.safe_dump(config, sort_keys=False))
    return project


@pytest.mark.postgres
def test_daemon_and_webserver_run_the_automations_on_postgres(pg_server, tmp_path, monkeypatch):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
    with ExitStack() as stack:
        dagster_pg = dagster_pg_env(stack.enter_context(fresh_database(pg_server)))
        results_url = stack.enter_context(fresh_database(pg_server))
        # model calls go over HTTP to a local server with a real model's latency, so runs last
        # long enough to overlap, and the queue's per-provider limit (127.0.0.1) applies
        server = stack.enter_context(LocalOpenAIServer(latency_s=0.4))
        port = free_port()
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            **dagster_pg,
            "EVAL_HOME": str(tmp_path / "eval_home"),
            "EVAL_PROJECT": str(three_suites(tmp_path)),
            "EVAL_RESULTS_URL": results_url,
            "EVAL_SENSOR_INTERVAL_S": "5",
            "EVAL_NIGHTLY_CRON": "* * * * *",  # the schedule ticks within a minute
            "EVAL_LLM_BASE_URL": server.base_url,
            "EVAL_LLM_API_KEY": "sk-local-test",
        }
        for var in ("OPENAI_API_KEY", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
            env.pop(var, None)
        logs = {name: open(tmp_path / f"{name}.log", "w") for name in ("daemon", "webserver")}  # noqa: SIM115
        processes = [
            subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"],
                             cwd=ROOT, env=env, stdout=logs["daemon"], stderr=subprocess.STDOUT,
                             start_new_session=True),
            subprocess.Popen([str(BIN / "dagster-webserver"), "-w", "workspace.yaml", "-h",
                              "127.0.0.1", "-p", str(port)], cwd=ROOT, env=env,
                             stdout=logs["webserver"], stderr=subprocess.STDOUT,
                             start_new_session=True),
        ]  # fmt: skip
        try:
            for key in ("DAGSTER_HOME", *dagster_pg):  # this process reads the same instance
                monkeypatch.setenv(key, env[key])
            instance = stack.enter_context(DagsterInstance.get())
            deadline = time.monotonic() + 300
            schedule_stopped = False
            while True:
                runs = instance.get_runs()
                nightly = [r for r in runs if r.tags.get("eval/trigger") == "nightly_full_eval"]
                by_sensor = [r for r in runs if r.tags.get("dagster/sensor_name")]
                if nightly and not schedule_stopped:
                    # one nightly tick is enough: stop the schedule as a user would, in the UI
                    stop_schedule(port, "nightly_full_eval")
                    schedule_stopped = True
                if schedule_stopped and by_sensor and all(r.status in DONE for r in runs):
                    break
                assert all(p.poll() is None for p in processes), "daemon or webserver died"
                assert time.monotonic() < deadline, (
                    f"runs did not finish: {[r.status for r in runs]}"
                )
                time.sleep(2)
            daemon_log = (tmp_path / "daemon.log").read_text()  # before shutdown's tracebacks
            server_runs = graphql(
                port, "{ runsOrError { ... on Runs { results { runId status } } } }"
            )
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=30)
                # and the code servers each started, which a stuck one outlives (seen: 20 min)
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            for log in logs.values():
                log.close()

        records = instance.get_run_records(RunsFilter())
        assert len(records) >= 2 * len(SUITES)  # sensor: production (full) + staging (smoke)
        for record in records:  # every run reached its verdict: the run's finding, shown in
            run = record.dagster_run  # its checks and its tag, not a Dagster failure (an ERROR
            if run.status == DagsterRunStatus.SUCCESS:  # verdict fails it, with numbers)
                assert run.tags.get("eval/verdict") in {"PASS", "FAIL", "UNDECIDED"}, run.tags
            else:
                assert run.status == DagsterRunStatus.FAILURE, (run.run_id, run.status)
                assert failure_causes(instance, run.run_id) == {"Failure"}, run.run_id
                assert run.tags.get("eval/verdict") == "ERROR", run.tags
        assert {r["runId"]: r["status"] for r in server_runs["runsOrError"]["results"]} == {
            r.dagster_run.run_id: r.dagster_run.status.value for r in records
        }
        assert {r.dagster_run.tags.get("eval/model_provider") for r in records} == {"127.0.0.1"}, [
            (r.dagster_run.run_id, r.dagster_run.status, r.dagster_run.tags) for r in records
            if "eval/model_provider" not in r.dagster_run.tags]  # fmt: skip
        intervals = [(r.start_time, r.end_time) for r in records]
        # queued runs ran concurrently … (how many at once depends on how fast this machine
        # starts run workers: 3 of 4 on a loaded CI box)
        assert overlap(intervals) >= 2
        assert overlap(intervals) <= 4  # … within eval/model_provider's limit of 4
        by_partition: dict[str, list[tuple[float, float]]] = {}
        for r in records:
            by_partition.setdefault(r.dagster_run.tags["dagster/partition"], []).append(
                (r.start_time, r.end_time)
            )
        assert max(overlap(v) for v in by_partition.values()) == 1  # one run per partition
        assert any(len(v) > 1 for v in by_partition.values())  # nightly met the sensor's run

        assert "Traceback" not in daemon_log and "OperationalError" not in daemon_log
        with ResultsStore(results_url) as store:
            complete = store.list_runs(status="complete", limit=1000)
            assert len(complete) == len(records)
            assert all(store.read_summary(r.run_id) for r in complete)
