"""One run split into shards: the split and its budget, the CLI's worker processes, the
Dagster steps (the SIGKILL of one shard is in test_crash_recovery.py)."""

import hashlib
import json

import pytest
from click.testing import CliRunner
from dagster import DagsterEventType, instance_for_test, materialize

from eval_pipeline import settings
from eval_pipeline.cli import main
from eval_pipeline.core.running.runner import jobs_of
from eval_pipeline.core.running.shards import ShardingError, auto_count, split
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.defs.evaluation import execution
from eval_pipeline.defs.evaluation.assets import build_evaluation_assets
from eval_pipeline.defs.partitions import EvalPartition, add_partitions, build_partitions
from eval_pipeline_tests.helpers import (
    SUITE_NAMES,
    clean_cli_env,
    copy_project,
    eval_resources,
    materialized,
    suite,
)
from eval_pipeline_tests.model_server import LocalOpenAIServer

ASSETS = build_evaluation_assets(build_partitions(SUITE_NAMES))


# --- the split ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("count", "concurrency", "rate", "repeats"),
    [(1, 8, None, 1), (3, 10, 9.0, 1), (4, 64, 100.0, 3), (7, 7, None, 1), (2, 64, None, 11)],
)
def test_shards_share_one_budget_and_cover_every_item_once(count, concurrency, rate, repeats):
    jobs = jobs_of(suite("drive_thru").load_cases(), repeats)
    shards = split(count, len(jobs), concurrency, rate)
    assert sum(s.concurrency for s in shards) == concurrency  # not C per shard
    assert max(s.concurrency for s in shards) - min(s.concurrency for s in shards) <= 1
    if rate is None:
        assert all(s.requests_per_second is None for s in shards)
    else:
        assert sum(s.requests_per_second for s in shards) == pytest.approx(rate)
    chosen = [(c.id, r) for s in shards for c, r in s.select(jobs)]
    assert sorted(chosen) == sorted((c.id, r) for c, r in jobs)  # each item exactly once
    sizes = [len(s.select(jobs)) for s in shards]
    assert max(sizes) - min(sizes) <= 1  # items are dealt out, not whole cases


def test_shards_get_the_same_mix_of_long_and_short_cases():
    """Dealing whole cases gave the benchmark's first shard 24 cases × 11 repeats (264
    items) and the second 253; dealt item by item each case's repeats spread over both."""
    cases = suite("drive_thru").load_cases()
    first, second = (s.select(jobs_of(cases, 11)) for s in split(2, len(cases) * 11, 64, None))
    assert (len(first), len(second)) == (259, 258)
    per_case = [sum(1 for c, _ in first if c.id == case.id) for case in cases]
    assert set(per_case) == {5, 6}


@pytest.mark.parametrize(("count", "concurrency", "items", "says"), [
    (0, 8, 10, "at least 1"),
    (9, 8, 47, "but concurrency 8: .* at most 8"),
    (6, 8, 5, "has 5 items: use at most 5"),
])  # fmt: skip
def test_unusable_shard_counts_are_refused_with_what_would_work(count, concurrency, items, says):
    with pytest.raises(ShardingError, match=says):
        split(count, items, concurrency, None)


def test_automatic_shard_count_follows_concurrency_and_size():
    assert auto_count(47, 8) == 1  # a smoke or full suite: one process
    assert auto_count(517, 64) == 2  # the throughput benchmark's run
    assert auto_count(20_000, 128) == 4
    assert auto_count(20_000, 8) == 1  # few in flight: one event loop keeps up
    assert auto_count(300, 256) == 1  # too few items to pay for a second process


# --- the CLI's worker processes -------------------------------------------------------
def cli_run(*args: str):
    return CliRunner().invoke(main, ["run", "--suite", "drive_thru", *args])


def test_cli_workers_give_the_same_run_as_one_process(tmp_path, monkeypatch):
    """--workers 3 over a real HTTP model server: the same scores as one process, never more
    requests in flight than --concurrency, one output per item, one summary. (Workers
    resuming from the memo: test_crash_recovery.py.)"""
    clean_cli_env(monkeypatch, tmp_path)
    with LocalOpenAIServer(latency_s=0.02) as server:
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", "sk-test")
        one = cli_run("--cache", "off", "--concurrency", "6", "--json", str(tmp_path / "1.json"))
        assert one.exit_code == 0, one.output
        calls = server.requests
        server.app.state.stats["max_in_flight"] = 0
        sharded = cli_run("--workers", "3", "--concurrency", "6", "--cache", "off",
                          "--json", str(tmp_path / "3.json"))  # fmt: skip
        assert sharded.exit_code == 0, sharded.output
        assert 0 < server.app.state.stats["max_in_flight"] <= 6
        assert server.requests - calls == calls  # every item ran once, in some worker
    first, second = (json.loads((tmp_path / f"{n}.json").read_text()) for n in (1, 3))
    assert first["summary"]["metrics"] == second["summary"]["metrics"]
    assert first["summary"]["n_items"] == second["summary"]["n_items"] == 47
    store = ResultsStore(settings.results_url())
    runs = store.list_runs(suite="drive_thru")
    assert len(runs) == 2 and all(r.status == "complete" for r in runs)
    outputs = store.read_outputs(runs[0].run_id)
    assert len({(o.item_id, o.repeat) for o in outputs}) == len(outputs) == 47


def test_cli_refuses_more_workers_than_cases_or_concurrency(tmp_path, monkeypatch):
    clean_cli_env(monkeypatch, tmp_path)
    result = cli_run("--tier", "smoke", "--workers", "4", "--concurrency", "2")
    assert result.exit_code == 2
    assert "4 shards (--workers, run config `shards`) but concurrency 2" in result.output
    assert result.output.strip().splitlines()[-1].startswith("VERDICT: ERROR")


def test_cli_refuses_recording_from_several_workers(tmp_path, monkeypatch):
    clean_cli_env(monkeypatch, tmp_path)
    monkeypatch.setenv("EVAL_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    result = cli_run("--record", "--workers", "2")
    assert result.exit_code == 2 and "without --workers" in result.output


# --- Dagster steps --------------------------------------------------------------------
def test_dagster_run_in_shards_writes_one_output_per_item_and_one_summary(tmp_path):
    project = copy_project(tmp_path)
    resources = eval_resources(tmp_path, project=project)
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        add_partitions(instance, [EvalPartition("drive_thru", "v1")])
        materialize([ASSETS.golden_dataset], partition_key="drive_thru", instance=instance,
                    resources=resources)  # fmt: skip
        result = materialize(
            [ASSETS.golden_dataset, *ASSETS.evaluation],
            selection=ASSETS.evaluation,
            partition_key=EvalPartition("drive_thru", "v1").key,
            instance=instance,
            resources=resources,
            run_config={"ops": {"agent_run_outputs": {"config": {"shards": 3,
                                                                 "concurrency": 7}}}},
        )  # fmt: skip
        assert result.success
        steps = {e.step_key for e in result.all_events
                 if e.event_type == DagsterEventType.STEP_SUCCESS}  # fmt: skip
        assert {f"agent_run_outputs.run_shard[shard_{i}]" for i in range(3)} <= steps
        shard_meta = [
            e.event_specific_data.metadata
            for e in result.all_events
            if e.event_type == DagsterEventType.STEP_OUTPUT and "run_shard" in e.step_key
        ]
        assert sorted(m["concurrency"].value for m in shard_meta) == [2, 2, 3]
        assert sum(m["items"].value for m in shard_meta) == 47
        materialization = materialized(result, "agent_run_outputs")
        assert materialization["shards"].value == 3
        assert materialization["items"].value == 47
    store = ResultsStore(resources["results_store"].url)
    (run,) = store.list_runs()
    assert run.status == "complete" and store.read_summary(run.run_id).n_items == 47
    assert len(store.read_outputs(run.run_id)) == 47


def test_dagster_automatic_shards_stay_one_in_one_process(tmp_path):
    """execute_in_process cannot give shards processes: the automatic count is 1."""
    project = copy_project(tmp_path)
    resources = eval_resources(tmp_path, project=project)
    with instance_for_test(temp_dir=str(tmp_path)) as instance:
        add_partitions(instance, [EvalPartition("drive_thru", "v1")])
        result = materialize(
            [ASSETS.golden_dataset, *ASSETS.evaluation],
            selection=[ASSETS.agent_run_outputs],
            partition_key=EvalPartition("drive_thru", "v1").key,
            instance=instance, resources=resources,
            run_config={"ops": {"agent_run_outputs": {"config": {"concurrency": 300,
                                                                 "repeats": 10}}}},
        )  # fmt: skip
        assert result.success
        materialization = materialized(result, "agent_run_outputs")
        assert materialization["shards"].value == 1  # auto would say 2 for 470 items


# --- executors ------------------------------------------------------------------------
def test_run_requests_choose_processes_by_expected_shards(monkeypatch):
    monkeypatch.delenv("EVAL_EXECUTOR", raising=False)
    assert execution.execution_config(1) == {"execution": {"config": {"in_process": {}}}}
    assert execution.execution_config(3) == {
        "execution": {"config": {"multiprocess": {"max_concurrent": 3}}}
    }
    assert execution.eval_executor() is execution.local_executor


def test_kubernetes_executor_gives_every_step_a_pod(monkeypatch):
    monkeypatch.setenv("EVAL_EXECUTOR", "k8s")
    executor = execution.eval_executor()
    assert executor.name == "k8s"
    assert execution.execution_config(4) == {}  # the executor's own config applies
    from eval_pipeline.defs import build_definitions
    from eval_pipeline_tests.helpers import PROJECT

    job = build_definitions(PROJECT).resolve_job_def("eval_job")
    assert job.executor_def.name == "k8s"


def test_unknown_executor_is_named(monkeypatch):
    monkeypatch.setenv("EVAL_EXECUTOR", "ray")
    with pytest.raises(ValueError, match="EVAL_EXECUTOR='ray'"):
        execution.eval_executor()


def test_missing_outputs_fail_the_run_with_what_is_missing(tmp_path):
    """collect_outputs' and the CLI's check: a shard that wrote only part of its items."""
    from eval_pipeline.core import evaluation
    from eval_pipeline.core.options import RunOptions
    from eval_pipeline.core.store.records import ItemOutput

    chosen = suite("drive_thru")
    plan = evaluation.plan(chosen, None, {"model": "offline"}, RunOptions(tier="smoke"))
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    store.create_run(plan.run)
    shard = plan.shards[0]
    written = [ItemOutput(item_id=c.id, repeat=0, output={}, latency_ms=1.0)
               for c in plan.cases[1:]]  # fmt: skip
    mine = [(c.id, r) for c, r in shard.select(jobs_of(plan.cases, plan.run.repeats))]
    store.write_outputs(plan.run.run_id, written, items=mine)
    with pytest.raises(RuntimeError, match=f"1 missing \\(first: {plan.cases[0].id} repeat 0\\)"):
        evaluation.check_complete(store, plan.run, plan.cases)
    failed = store.get_run(plan.run.run_id)
    assert failed.status == "failed" and "1 missing" in failed.error


def test_automation_runs_use_the_suite_concurrency_and_processes_when_sharded(
    tmp_path, monkeypatch
):
    """The sensor's and the nightly schedule's run requests: a suite's own `concurrency`,
    and a process per step when that concurrency and the item count give several shards."""
    import yaml

    from eval_pipeline.defs.automation.common import eval_run_request
    from eval_pipeline.defs.resources import SuitesResource

    monkeypatch.delenv("EVAL_EXECUTOR", raising=False)
    project = copy_project(tmp_path)
    suites = SuitesResource(project=str(project))
    small = eval_run_request(suites, "drive_thru", "v1", "full", run_key="a", tags={})
    assert small.run_config["execution"] == {"config": {"in_process": {}}}
    body = yaml.safe_load(project.read_text())
    body["suites"]["drive_thru"] |= {"concurrency": 64, "repeats": 10}  # 470 items
    project.write_text(yaml.safe_dump(body, sort_keys=False))
    large = eval_run_request(suites, "drive_thru", "v1", "full", run_key="b", tags={})
    assert large.run_config["execution"]["config"]["multiprocess"]["max_concurrent"] == 2
    assert large.run_config["ops"]["agent_run_outputs"]["config"]["concurrency"] == 64


def test_cli_workers_replay_recordings_without_an_endpoint(tmp_path, monkeypatch):
    """Record in one process against a server; replay with two workers and no endpoint."""
    project = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path, project)
    with LocalOpenAIServer() as server:
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", "sk-test")
        recorded = cli_run("--tier", "smoke", "--record", "--json", str(tmp_path / "r.json"))
        assert recorded.exit_code == 0, recorded.output
    monkeypatch.delenv("EVAL_LLM_BASE_URL")
    replayed = cli_run("--tier", "smoke", "--replay", "--workers", "2", "--concurrency", "4",
                       "--json", str(tmp_path / "p.json"))  # fmt: skip
    assert replayed.exit_code == 0, replayed.output
    first, second = (json.loads((tmp_path / n).read_text()) for n in ("r.json", "p.json"))
    assert first["summary"]["metrics"] == second["summary"]["metrics"]
    assert second["summary"]["n_errors"] == 0
    (recordings,) = (project.parent / "recordings").rglob("*.jsonl")
    header = json.loads(recordings.read_text().splitlines()[0])  # (the file's first line)
    header["recording"] |= {"requests": 0, "sha256": hashlib.sha256(b"").hexdigest()}
    recordings.write_text(json.dumps(header) + "\n")  # the workers answered from it: now
    # it holds no request, and every request misses
    missed = cli_run("--tier", "smoke", "--replay", "--workers", "2", "--concurrency", "4",
                     "--cache", "off")  # fmt: skip
    assert missed.exit_code == 2, missed.output
    assert "11 of 11 items made requests the recordings cannot answer" in missed.output


@pytest.mark.parametrize("module, given, expected", [
    ("eval_pipeline.definitions", {}, {"forkserver": {"preload_modules": [
        "eval_pipeline.definitions"]}}),
    (None, {"max_concurrent": 2}, {"forkserver": {"preload_modules": [
        "eval_pipeline.defs", "langgraph.graph", "langchain_openai"]}}),
    ("eval_pipeline.definitions", {"start_method": {"spawn": {}}}, {"spawn": {}}),
])  # fmt: skip
def test_step_processes_are_forked_from_the_code_location_unless_the_run_says(
        module, given, expected):  # fmt: skip
    """`dagster asset materialize` and the UI's Materialize give no start method: a step
    process is forked from a server that loaded the job's module (a fresh interpreter per
    step costs an interpreter start and a code load, ~3 s); a run config's choice stands."""
    chosen = execution.steps_forked({"multiprocess": given}, module)["multiprocess"]
    assert chosen == {**given, "start_method": expected}
    assert execution.steps_forked({"in_process": {}}, module) == {"in_process": {}}
