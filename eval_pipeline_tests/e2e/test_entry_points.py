"""One run service: the same suite through the CLI, the Python API and Dagster stores the
same run — the same baseline, options, outputs, scores, summary and verdict
(core/evaluation.py is every entry point's; each is a thin caller)."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner
from dagster import instance_for_test, materialize

from eval_pipeline import evaluate
from eval_pipeline.agents.project import load_project
from eval_pipeline.cli import main
from eval_pipeline.core import evaluation
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.defs.evaluation.assets import build_evaluation_assets
from eval_pipeline.defs.partitions import EvalPartition, add_partitions, build_partitions
from eval_pipeline.defs.resources import LLMResource
from eval_pipeline_tests.drivers import DRIVERS, drive
from eval_pipeline_tests.helpers import SUITE_NAMES, clean_cli_env, copy_project, eval_resources
from eval_pipeline_tests.model_server import LocalOpenAIServer

OPTIONS = {"tier": "smoke", "cache": "off", "concurrency": 4}  # cache off: each one runs


def test_cli_api_and_dagster_store_the_same_run(tmp_path, monkeypatch):
    project = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path, project)  # the CLI's store: tmp_path/results.sqlite
    baseline = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--prompt-version", "1"])
    assert baseline.exit_code == 0, baseline.output

    flags = ["--tier", "smoke", "--cache", "off", "--concurrency", "4"]
    cli = CliRunner().invoke(
        main, ["run", "--suite", "drive_thru", "--prompt-version", "2", *flags]
    )
    assert cli.exit_code == 1, cli.output  # v2 is the worse prompt: the gate fails it
    api = evaluate("drive_thru", prompt_version=2, **OPTIONS)
    assert api.exit_code == 1
    assets = build_evaluation_assets(build_partitions(SUITE_NAMES))
    resources = eval_resources(tmp_path, project=project)
    (tmp_path / "dagster").mkdir(exist_ok=True)
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        add_partitions(instance, [EvalPartition("drive_thru", "v2")])
        materialize([assets.golden_dataset], partition_key="drive_thru", instance=instance,
                    resources=resources)  # fmt: skip
        dagster = materialize(
            [assets.golden_dataset, *assets.evaluation], selection=assets.evaluation,
            partition_key=EvalPartition("drive_thru", "v2").key,
            instance=instance, resources=resources, raise_on_error=False,
            run_config={"ops": {"agent_run_outputs": {"config": OPTIONS}}},
        )  # fmt: skip
        tags = instance.get_run_by_id(dagster.run_id).tags
    assert tags["eval/verdict"] == "FAIL"  # the gate failed it, as the CLI exited 1

    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    runs = store.list_runs(suite="drive_thru", prompt_version="v2")
    assert len(runs) == 3 and {r.status for r in runs} == {"complete"}
    production = store.list_runs(suite="drive_thru", prompt_version="v1")[0].run_id
    seen = [_stored(store, run, production) for run in runs]
    assert seen[0] == seen[1] == seen[2]
    verdicts = {run.run_id: _verdict(store, run, project) for run in runs}
    first, *rest = verdicts.values()
    for other in rest:
        assert other == first
    failed_checks = {c.check_name for c in dagster.get_asset_check_evaluations() if not c.passed}
    # the staging version's own floor fails on the smoke tier: the verdict is known, so the
    # sequential gate takes no further case, everywhere
    assert "min_mean_scores" in failed_checks and set(api.failed) <= failed_checks


def _stored(store: ResultsStore, run, production: str):
    """What a run stored, without what differs by nature (ids, times, the Dagster run)."""
    assert run.baseline_run_id == production
    options = run.options.model_dump(exclude={"shards"})
    outputs = sorted((o.item_id, o.repeat, repr(o.output), o.error, o.fault)
                     for o in store.read_outputs(run.run_id))  # fmt: skip
    scores = sorted((s.item_id, s.repeat, s.evaluator, s.value, s.error_kind)
                    for s in store.read_scores(run.run_id))  # fmt: skip
    summary = store.read_summary(run.run_id)
    return (run.prompt_hash, run.dataset_version, run.tier, run.model_params, options,
            outputs, scores, summary.metrics)  # fmt: skip


def _verdict(store: ResultsStore, run, project):
    suite = load_project(project).suite("drive_thru")
    loaded = suite.load_cases()
    cases = evaluation.cases_of_run(store, run.run_id, loaded)
    result = evaluation.verdict(store, run, suite, cases, store.read_summary(run.run_id), loaded)
    gate = tuple(
        (c.name, c.label, c.description if c.name != "cost_latency" else "")
        for c in result.gate.checks
    )  # (latencies differ by nature)
    checks = tuple((c.name, c.label, c.outcome.description) for c in result.checks)
    return result.verdict, tuple(result.failed), checks, gate


@pytest.mark.parametrize("driver", DRIVERS)
def test_llm_judges_keep_to_the_runs_concurrency(driver, tmp_path, monkeypatch):
    """LLM judges run under the run's own concurrency, whichever driver scores (before:
    Dagster's item_scores scored without the run's settings, 8 in flight)."""
    project = copy_project(tmp_path)
    body = yaml.safe_load(project.read_text())
    body["suites"]["drive_thru"]["evaluators"].append(
        {"llm_judge": {"rubric": "Polite?", "model": "judge-model", "name": "politeness"}}
    )
    project.write_text(yaml.safe_dump(body, sort_keys=False))
    clean_cli_env(monkeypatch, tmp_path, project)
    with LocalOpenAIServer(latency_s=0.1, models=("offline", "judge-model")) as server:
        for name, value in (("EVAL_LLM_BASE_URL", server.base_url),
                            ("EVAL_LLM_API_KEY", "sk-judged-run"),
                            ("EVAL_LLM_MODEL", "offline")):  # fmt: skip
            monkeypatch.setenv(name, value)  # (a judge's endpoint is read with the suite)
        resources = eval_resources(tmp_path, project=project)
        resources["llm"] = LLMResource(base_url=server.base_url, api_key="sk-judged-run",
                                       model="offline")  # fmt: skip
        done = drive(driver, tmp_path, project, "drive_thru", 1, resources=resources,
                     tier="smoke", concurrency=2)  # fmt: skip
        stats = server.app.state.stats
    assert done.verdict == "PASS"
    assert stats["by_model"]["judge-model"] == 11 and stats["max_in_flight"] <= 2


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_sequential_gate_goes_on_past_the_tier(driver, tmp_path, monkeypatch):
    """The default gate: the worse staging prompt of order_management cannot be decided on
    its five smoke cases, so the run goes on into the suite's further cases (Dagster: in
    eval_summary's step); reading the run back from the store, as the demo does, reaches
    the same verdict on the same cases."""
    project = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path, project)
    base = drive(driver, tmp_path, project, "order_management", 1, tier="full")
    assert base.verdict == "PASS"
    staged = drive(driver, tmp_path, project, "order_management", 2, tier="smoke")
    assert staged.verdict != "PASS"
    store = staged.store
    run = store.get_run(staged.run_id)
    suite = load_project(project).suite("order_management")
    loaded = suite.load_cases()
    cases = evaluation.cases_of_run(store, run.run_id, loaded)
    assert len(cases) > 5
    again = evaluation.verdict(store, run, suite, cases, store.read_summary(run.run_id), loaded)
    assert again.verdict == staged.verdict
    if driver == "dagster":  # how far it went, on the paired_gate check and the summary
        meta = staged.checks["paired_gate"].metadata  # (numbers keyed by suite, for plots)
        assert meta["order_management.cases_run"].value == len(cases)
        assert meta["order_management.suite_cases"].value == 32
        calls = meta["order_management.model_calls"].value
        assert calls > 0 and f"({calls} model calls)" in staged.checks["paired_gate"].description
        assert staged.summary_metadata["sequential"].value.endswith(f"({calls} model calls)")
