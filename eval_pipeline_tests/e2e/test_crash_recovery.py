"""A run worker killed with SIGKILL half-way: re-executing it from failure, or simply
running it again, reuses the items it completed, and the store ends with exactly one
complete run per execution, no partial or duplicate rows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus
from sqlalchemy import func, select

from eval_pipeline.core.running.runner import jobs_of
from eval_pipeline.core.store.records import RunStatus
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.store.tables import item_memo
from eval_pipeline_tests.helpers import CONFIG_ENV, ROOT, copy_project, suite
from eval_pipeline_tests.model_server import LocalOpenAIServer

ITEMS = 47  # drive_thru, full tier
CLI = str(Path(sys.executable).parent / "eval-pipeline")


def memoized(store: ResultsStore) -> int:
    with store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(item_memo)).scalar_one()


@pytest.fixture
def deployment(tmp_path, monkeypatch):
    """A Dagster instance and results store on disk, the model behind HTTP with latency."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    with LocalOpenAIServer(latency_s=0.15) as server:
        env = {
            "DAGSTER_HOME": str(home),
            "EVAL_HOME": str(tmp_path / "eval_home"),
            "EVAL_RESULTS_URL": f"sqlite:///{tmp_path / 'results.sqlite'}",
            "EVAL_LLM_BASE_URL": server.base_url,
            "EVAL_LLM_API_KEY": "sk-test",
        }
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        for key in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
            monkeypatch.delenv(key, raising=False)
        with DagsterInstance.get() as instance:
            yield instance, server, ResultsStore(env["EVAL_RESULTS_URL"])


def run_worker(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "eval_pipeline_tests.crash_target", *args],
                            cwd=ROOT, env=os.environ.copy(), start_new_session=True)  # fmt: skip


def kill_half_way(instance, store) -> str:
    """Start the run worker, SIGKILL its process group once ~half the items are memoized,
    and mark the run failed as run monitoring would. Returns the Dagster run id."""
    worker = run_worker("drive_thru", "v1")
    deadline = time.monotonic() + 120
    while memoized(store) < ITEMS // 2:
        assert worker.poll() is None, "the run finished before it could be killed"
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.2)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)
    (run,) = instance.get_runs()
    assert run.status == DagsterRunStatus.STARTED  # nobody told Dagster
    instance.report_run_failed(run, "run worker killed (SIGKILL)")
    return run.run_id


@pytest.mark.parametrize("recovery", ["re-execute from failure", "plain re-run"])
def test_killed_run_is_recovered_without_redoing_finished_items(deployment, recovery):
    instance, server, store = deployment
    killed = kill_half_way(instance, store)
    done_before = memoized(store)
    assert ITEMS // 2 <= done_before < ITEMS
    (crashed,) = store.list_runs()
    assert crashed.status == "running" and store.read_outputs(crashed.run_id) == []

    calls = server.requests
    # the recovery is a new run worker process, as in a deployment
    reexecute = recovery == "re-execute from failure"
    args = ["--reexecute", killed] if reexecute else ["drive_thru", "v1"]
    assert run_worker(*args).wait(timeout=180) == 0
    recovered = instance.get_runs(limit=1)[0]
    assert recovered.status == DagsterRunStatus.SUCCESS
    assert recovered.parent_run_id == (killed if reexecute else None)
    redone = server.requests - calls
    assert 0 < redone < 2.9 * (ITEMS - done_before) + 3  # ~2.6 calls per remaining item

    runs = store.list_runs()
    complete = [r for r in runs if r.status == "complete"]
    assert len(complete) == 1
    (run,) = complete
    outputs = store.read_outputs(run.run_id)
    assert len(outputs) == ITEMS == len({o.item_id for o in outputs})
    assert sum(1 for o in outputs if o.source_run_id == crashed.run_id) >= done_before
    assert len(store.read_scores(run.run_id)) == 3 * ITEMS
    assert store.read_summary(run.run_id).n_items == ITEMS
    if reexecute:  # same root run → same evaluation run
        assert run.run_id == crashed.run_id and len(runs) == 1
    else:  # a new evaluation run; the dead one is marked, not left 'running'
        (dead,) = [r for r in runs if r.run_id == crashed.run_id]
        assert dead.status == "abandoned" and "ended without finishing it" in (dead.error or "")
        assert store.read_outputs(dead.run_id) == []


def memoized_items(store: ResultsStore, items: set[str]) -> int:
    with store.engine.connect() as conn:
        rows = conn.execute(select(item_memo.c.item_id)).scalars()
        return sum(1 for item in rows if item in items)


def shard_pid(instance, step_key: str, deadline: float) -> int:
    """The process the multiprocess executor started for ``step_key`` (its STEP_START)."""
    while time.monotonic() < deadline:
        for run in instance.get_runs():
            for record in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_START):
                event = record.dagster_event
                if event is not None and event.step_key == step_key:
                    return event.pid
        time.sleep(0.2)
    raise AssertionError(f"{step_key} never started")


def test_killed_shard_reruns_only_its_own_unfinished_items(deployment):
    """Two shards, each a process; SIGKILL one half-way. The run fails; re-executing it
    from failure runs only that shard again, and that shard only its unfinished items."""
    instance, server, store = deployment
    cases = suite("drive_thru").load_cases()
    shard_1 = {c.id for c, _ in jobs_of(cases, 1)[1::2]}  # round-robin: the second shard's
    worker = run_worker("drive_thru", "v1", "2")
    deadline = time.monotonic() + 120
    pid = shard_pid(instance, "agent_run_outputs.run_shard[shard_1]", deadline)
    while memoized_items(store, shard_1) < len(shard_1) // 2:
        assert worker.poll() is None, "the run finished before the shard could be killed"
        assert time.monotonic() < deadline, "the shard made no progress"
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    assert worker.wait(timeout=120) == 1  # the other shard finishes; the run fails
    (failed,) = instance.get_runs()
    assert failed.status == DagsterRunStatus.FAILURE
    finished_before = memoized_items(store, shard_1)
    assert len(shard_1) // 2 <= finished_before < len(shard_1)
    (run,) = store.list_runs()
    first_outputs = {(o.item_id, o.repeat) for o in store.read_outputs(run.run_id)}
    assert {item for item, _ in first_outputs} == {c.id for c in cases} - shard_1

    calls = server.requests
    assert run_worker("--reexecute", failed.run_id).wait(timeout=180) == 0
    recovered = instance.get_runs(limit=1)[0]
    assert recovered.status == DagsterRunStatus.SUCCESS
    steps = {r.dagster_event.step_key for r in instance.all_logs(
        recovered.run_id, of_type=DagsterEventType.STEP_START)}  # fmt: skip
    assert "agent_run_outputs.run_shard[shard_1]" in steps
    assert not any("shard_0" in s or "plan_shards" in s for s in steps)
    redone = server.requests - calls
    assert 0 < redone < 2.9 * (len(shard_1) - finished_before) + 3

    (complete,) = store.list_runs()
    assert complete.run_id == run.run_id and complete.status == "complete"
    outputs = store.read_outputs(run.run_id)
    assert len(outputs) == ITEMS == len({o.item_id for o in outputs})
    for output in outputs:
        if output.item_id not in shard_1:  # written once, by the first run's shard_0
            assert output.source_run_id is None
    reused = [o for o in outputs if o.item_id in shard_1 and o.source_run_id == run.run_id]
    assert len(reused) >= finished_before
    assert store.read_summary(run.run_id).n_items == ITEMS


def children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid`` (Linux: /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc (Linux)")
def test_a_killed_cli_run_leaves_no_worker_calling_the_model_and_is_marked_abandoned(tmp_path):
    """``kill -9`` of ``run --workers 2`` left its two worker processes running: they kept
    calling the model (the memo grew from 0 to 2,000 rows), then hung; the run stayed
    ``running`` in the store for ever. Now the workers end with their parent, and the next
    run marks the dead one abandoned, keeping what it finished."""
    project = copy_project(tmp_path)
    store_url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    with LocalOpenAIServer(latency_s=0.3) as server:
        env |= {"EVAL_HOME": str(tmp_path / "home"), "EVAL_RESULTS_URL": store_url,
                "EVAL_LLM_BASE_URL": server.base_url, "EVAL_LLM_API_KEY": "sk-test"}  # fmt: skip
        command = [CLI, "run", "--suite", "drive_thru", "--workers", "2", "--concurrency", "2"]
        parent = subprocess.Popen(command, cwd=project.parent, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        store = ResultsStore(store_url)
        deadline = time.monotonic() + 120
        while memoized(store) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = children(parent.pid)
        assert memoized(store) >= 4 and len(workers) >= 2, (memoized(store), workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(w) for w in workers), "a worker outlived its parent"
        asked = server.app.state.stats["requests"]
        time.sleep(1.5)
        assert server.app.state.stats["requests"] == asked  # nobody is calling the model
        (dead,) = store.list_runs(suite="drive_thru")
        assert dead.status is RunStatus.RUNNING  # as the kill left it
        kept = memoized(store)  # the items it finished: a later run reuses them
        again = subprocess.run([*command[:4], "--tier", "smoke"], cwd=project.parent, env=env,
                               capture_output=True, text=True, timeout=300)  # fmt: skip
    said = " ".join(again.stdout.split())
    assert f"1 earlier run(s) whose process had ended are marked abandoned, what they " \
           f"finished kept: {dead.run_id}" in said, said  # fmt: skip
    marked = store.get_run(dead.run_id)
    assert marked.status is RunStatus.ABANDONED and "ended before the run did" in marked.error
    assert memoized(store) >= kept >= 4
