"""A Postgres outage in the middle of a run, on a deployment as docs/deployment.md sets it
up: deploy/dagster.yaml on a real Postgres, a separate dagster-daemon, the results store on
the same server, a team's project outside this repository. A label move starts a run; the
server stops for 15 s just as the run's shard has written its outputs, so the run dies
(Dagster cannot write its events). Before, the run stayed failed (no run retries) and its
evaluation run `running` in the store. Now the daemon retries it from failure and it
settles once: one complete evaluation run with its verdict in the store, one eval_summary in
Dagster, every item once.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import ExitStack, suppress
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus

from eval_pipeline.core.store.records import RunStatus
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import CONFIG_ENV, ROOT, write_team_project
from eval_pipeline_tests.pg import PostgresUnavailable, dagster_pg_env, fresh_database, own_cluster

BIN = Path(sys.executable).parent
CLI = str(BIN / "eval-pipeline")
OUTAGE_S = 15
ITEMS = 16
AGENT = """
import time


def answer(input, ctx):
    time.sleep(0.5)  # as a model call takes a while
    return {"response": "The sum is " + str(input["a"] + input["b"]) + "."}
"""


def team_project(root: Path) -> Path:
    """A team's suite of 16 cases whose prompt has no label yet."""
    cases = [{"id": f"sum-{i:02d}", "input": {"message": f"{i} + {i}?", "a": i, "b": i},
              "expected_output": {"expected_fields": [str(2 * i)]},
              "metadata": {"category": "sum", "difficulty": "easy", "tier": "full"}}
             for i in range(ITEMS)]  # fmt: skip
    thresholds = {"primary_metric": "completeness", "min_mean": {"completeness": 0.3}}
    project = write_team_project(root, "slowsum", AGENT, cases, thresholds,
                                 {1: "Add the two numbers."})  # fmt: skip
    (root / "prompts" / "labels.yaml").write_text("{}\n")
    return project


def wait_for(what: str, seconds: float, check, daemon: subprocess.Popen, every: float = 0.5):
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert daemon.poll() is None, "the daemon died"
        assert time.monotonic() < deadline, f"{what}: not within {seconds:g} s"
        time.sleep(every)
    return found


@pytest.mark.postgres
def test_a_run_cut_by_a_postgres_outage_is_retried_and_settles_once(tmp_path, monkeypatch):
    with ExitStack() as stack:
        try:
            server = stack.enter_context(own_cluster())  # of its own: the test stops it
        except PostgresUnavailable as exc:
            if os.environ.get("CI") == "true":
                pytest.fail(f"Postgres tests must run in CI: {exc}")
            pytest.skip(str(exc))
        dagster_pg = dagster_pg_env(stack.enter_context(fresh_database(server.url)))
        results_url = stack.enter_context(fresh_database(server.url))
        store = stack.enter_context(ResultsStore(results_url))
        home = tmp_path / "dagster_home"
        home.mkdir()
        shutil.copy(ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
        project = team_project(tmp_path / "team")
        env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
        env |= {"DAGSTER_HOME": str(home), **dagster_pg, "EVAL_RESULTS_URL": results_url,
                "EVAL_HOME": str(tmp_path / "eval_home"),
                "EVAL_SENSOR_INTERVAL_S": "2"}  # fmt: skip
        log = stack.enter_context((tmp_path / "daemon.log").open("w"))
        daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-m",
                                   "eval_pipeline.definitions"], cwd=project.parent, env=env,
                                  stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)  # fmt: skip
        try:
            for key in ("DAGSTER_HOME", *dagster_pg):  # this process reads the same instance
                monkeypatch.setenv(key, env[key])
            instance = stack.enter_context(DagsterInstance.get())
            wait_for("the label sensor's first tick", 120,
                     lambda: instance.get_ticks(*sensor_origin(instance)), daemon)  # fmt: skip
            moved = subprocess.run([CLI, "prompts", "label", "slowsum/assistant", "1",
                                    "production"], cwd=project.parent, env=env,
                                   capture_output=True, text=True, timeout=120)  # fmt: skip
            assert moved.returncode == 0, moved.stdout + moved.stderr

            def produced() -> bool:
                runs = store.list_runs()
                return bool(runs) and len(store.read_outputs(runs[0].run_id)) == ITEMS

            wait_for("the shard's outputs", 180, produced, daemon, every=0.05)
            server.stop()  # as the run goes on from its shard: Dagster cannot write its events
            time.sleep(OUTAGE_S)
            server.start()

            def settled() -> list:
                runs = instance.get_runs()
                return [r for r in runs if r.status == DagsterRunStatus.SUCCESS]

            (succeeded,) = wait_for("a run that recovers", 240, settled, daemon, every=1)
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
            # and its code server, which outlived it by hours now and then
            with suppress(ProcessLookupError):
                os.killpg(daemon.pid, signal.SIGKILL)

        runs = instance.get_runs()
        print([(r.run_id, r.status, r.parent_run_id, r.tags.get("dagster/failure_reason"))
               for r in runs])  # (shown when the test fails)
        (first,) = [r for r in runs if r.parent_run_id is None]
        if first.status == DagsterRunStatus.SUCCESS:
            # Now and then (once in three full runs on 2026-11-28) the run writes nothing during
            # the outage and outlives it: nothing to recover, and it still settles once.
            assert succeeded.run_id == first.run_id and len(runs) == 1
        else:
            assert first.status == DagsterRunStatus.FAILURE  # the outage killed it …
            assert succeeded.root_run_id == first.run_id  # … and a retry recovered it
            assert succeeded.tags.get("dagster/retry_number")
            assert len(runs) <= 3  # within max_retries: 2

        (evaluation,) = store.list_runs()  # one evaluation run: the retries went on with it
        assert evaluation.status == RunStatus.COMPLETE
        assert store.read_verdict(evaluation.run_id) is not None
        outputs = store.read_outputs(evaluation.run_id)
        assert len(outputs) == ITEMS == len({o.item_id for o in outputs})
        (summary,) = instance.fetch_materializations(AssetKey("eval_summary"), limit=10).records
        assert summary.run_id == succeeded.run_id  # one verdict in Dagster


def sensor_origin(instance: DagsterInstance) -> tuple[str, str]:
    """The prompt label sensor's origin and selector ids, as the daemon stored its state."""
    for state in instance.all_instigator_state():
        if state.name == "prompt_label_sensor":
            return state.instigator_origin_id, state.selector_id
    return "", ""
