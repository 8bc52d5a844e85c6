"""The asset graph on a real (temporary) Dagster instance: checks, gating, bad input."""

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import (
    Definitions,
    EnvVar,
    FloatMetadataValue,
    IntMetadataValue,
    instance_for_test,
    materialize,
)

from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.defs.evaluation.assets import build_evaluation_assets
from eval_pipeline.defs.partitions import EvalPartition, add_partitions, build_partitions
from eval_pipeline.defs.resources import LLMResource
from eval_pipeline_tests.helpers import (
    PROJECT,
    ROOT,
    SUITE_NAMES,
    copy_project,
    eval_resources,
    materialized,
)
from eval_pipeline_tests.model_server import LocalOpenAIServer

ASSETS = build_evaluation_assets(build_partitions(SUITE_NAMES))
golden_dataset = ASSETS.golden_dataset


@pytest.fixture
def env(tmp_path):
    """A Dagster instance and resources on a copy of the project: ``tmp_path / "datasets"``
    is the copy's datasets folder."""
    project = copy_project(tmp_path)
    (tmp_path / "datasets").symlink_to(project.parent / "datasets")
    resources = eval_resources(tmp_path, project=project)
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        yield instance, resources, tmp_path


def evaluate(instance, resources, version, tier="smoke", suite="drive_thru", **options):
    add_partitions(instance, [EvalPartition(suite, version)])
    materialize([golden_dataset], partition_key=suite, instance=instance,
                resources=resources)  # fmt: skip
    return materialize(
        [golden_dataset, *ASSETS.evaluation],
        selection=ASSETS.evaluation,
        partition_key=EvalPartition(suite, version).key,
        instance=instance,
        resources=resources,
        run_config={"ops": {"agent_run_outputs": {"config": {"tier": tier, **options}}}},
        raise_on_error=False,
    )


def checks(result):
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_definitions_load(monkeypatch):
    # the repository's code location falls back to the examples by setting EVAL_PROJECT
    # for its process: here, set beforehand and restored after this test
    monkeypatch.setenv("EVAL_PROJECT", str(PROJECT))
    from eval_pipeline.definitions import defs

    Definitions.validate_loadable(defs)
    assert {j.name for j in defs.jobs} >= {"eval_job", "golden_dataset_job", "traces_job"}


def test_a_code_location_module_finds_its_project_file_whatever_the_layout(tmp_path):
    """docs/dagster.md's one-line module, ``build_definitions(__file__)``, in a src layout
    (LangChain's templates): the docs' ``Path(__file__).parents[1]`` pointed at src/."""
    from eval_pipeline.agents.project_errors import ProjectError
    from eval_pipeline.defs import build_definitions

    module = copy_project(tmp_path).parent / "src" / "my_agent" / "definitions.py"
    module.parent.mkdir(parents=True)
    module.write_text("")
    defs = build_definitions(module)
    assert {j.name for j in defs.jobs} >= {"eval_job"}
    with pytest.raises(ProjectError, match=r"no eval-pipeline\.yaml in its folder or above"):
        build_definitions(tmp_path.parent / "elsewhere" / "definitions.py")


def test_graph_materializes_and_checks_pass(env):
    instance, resources, tmp_path = env
    result = evaluate(instance, resources, "v1")
    assert result.success
    found = checks(result)
    thresholds = ("min_mean_scores", "all_items_pass", "category_floors")
    assert {n: found[n].passed for n in thresholds} == dict.fromkeys(thresholds, True)
    assert found["min_mean_scores"].description.startswith("PASS — drive_thru v1: ")
    assert found["min_mean_scores"].metadata["partition"].value == "drive_thru v1"
    assert found["min_mean_scores"].metadata["drive_thru.order_correctness mean"].value == 1.0
    assert found["min_mean_scores"].metadata["drive_thru.order_correctness minimum"].value == 0.85
    # nothing to compare with: the gate checks tested nothing, and get no result (the UI
    # shows them skipped, never passed); the materialization says why
    gates = ("paired_gate", "binary_gate", "category_deltas", "cost_latency")
    assert not set(gates) & set(found), found
    assert instance.get_run_by_id(result.run_id).tags["eval/verdict"] == "PASS"
    meta = materialized(result, "eval_summary")
    untested = meta["checks_not_tested"].value
    assert all(f"**{n}**: no baseline yet" in untested for n in gates), untested
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    (run,) = store.list_runs(suite="drive_thru", prompt_version="v1")
    assert run.status == "complete" and run.tier == "smoke" and run.model == "offline"
    assert run.dagster_run_id == result.run_id
    summary = store.read_summary(run.run_id)
    assert summary.n_cases == 11
    meta = materialized(result, "eval_summary")
    assert meta["mean_order_correctness"].value == summary.metrics["order_correctness"]
    assert "| simple |" in meta["by_category"].value


def verdict_logged(instance, run_id: str) -> tuple[str, str]:
    """The level and text of the run's verdict line in its log (eval_summary's)."""
    lines = [(e.level, e.user_message) for e in instance.all_logs(run_id)
             if e.dagster_event is None and e.step_key == "eval_summary"]  # fmt: skip
    (found,) = [(logging.getLevelName(level), text) for level, text in lines
                if re.match(r"\w+ v\d+: (PASS|FAIL|UNDECIDED|ERROR)\b", text)]  # fmt: skip
    return found


def test_a_failing_blocking_check_is_red_and_the_run_says_fail_without_failing(env):
    """A FAIL is the run's finding, not its failure: the check fails with ERROR (red), the
    run is tagged eval/verdict=FAIL and logs why at ERROR, and it succeeds, so the checks
    that tested nothing get no result ("Skipped"; in a failed run Dagster shows them as
    "Execution failed"). Before: the run failed with a stack trace, and the untested
    checks passed, saying N/A first."""
    instance, resources, tmp_path = env
    thresholds = tmp_path / "datasets" / "drive_thru" / "thresholds.yaml"
    thresholds.write_text(
        "primary_metric: order_correctness\nmin_mean: {order_correctness: 0.95}\n"
    )
    result = evaluate(instance, resources, "v2", tier="full")
    assert result.success
    assert instance.get_run_by_id(result.run_id).tags["eval/verdict"] == "FAIL"
    found = checks(result)
    assert found["min_mean_scores"].passed is False
    assert found["min_mean_scores"].severity.value == "ERROR"
    assert found["min_mean_scores"].description.startswith("FAIL — drive_thru v2: ")
    level, message = verdict_logged(instance, result.run_id)
    assert level == "ERROR", message
    assert "drive_thru v2: FAIL — blocking checks failed: min_mean_scores" in message
    assert "order_correctness 0.8936 < 0.95" in message  # the numbers, not just a name
    # these thresholds set no floors, and there is no baseline: no result, "Skipped"
    assert "category_floors" not in found and "paired_gate" not in found
    untested = materialized(result, "eval_summary")["checks_not_tested"].value
    assert "**category_floors**" in untested and "**paired_gate**" in untested


def test_golden_dataset_check_results(env):
    instance, resources, _ = env
    result = materialize([golden_dataset], partition_key="drive_thru", instance=instance,
                         resources=resources)  # fmt: skip
    found = checks(result)
    assert found["dataset_valid"].passed and found["absence_coverage"].passed
    assert found["absence_coverage"].metadata["drive_thru.share_expecting_nothing"].value >= 0.25
    # Each result names its partition; each check says what it tests (it said nothing).
    for name in ("dataset_valid", "absence_coverage"):
        assert found[name].metadata["partition"].value == "drive_thru"
        assert found[name].description.startswith("PASS — drive_thru: ")
    specs = {spec.name: spec for spec in golden_dataset.check_specs}
    assert specs["absence_coverage"].description.startswith("Blocks. At least 25%")
    assert specs["dataset_valid"].description.startswith("Blocks. Every case file")


def test_absence_coverage_is_not_a_pass_for_a_suite_without_absence_categories(env):
    """Before: a suite declaring no absence categories passed it with a share of 0.0."""
    instance, resources, _ = env
    result = materialize([golden_dataset], partition_key="product_discovery",
                         instance=instance, resources=resources)  # fmt: skip
    assert result.success and "absence_coverage" not in checks(result)  # "Skipped"
    untested = result.asset_materializations_for_node("golden_dataset")[0].metadata
    assert "**absence_coverage**: not tested" in untested["checks_not_tested"].value


def test_malformed_dataset_fails_before_any_llm_call(env):
    instance, resources, tmp_path = env
    cases = tmp_path / "datasets" / "drive_thru" / "cases.yaml"
    cases.write_text(cases.read_text().replace("item_id: egg-mcmuffin", "item_id: mc-rib", 1))
    result = materialize([golden_dataset], partition_key="drive_thru", instance=instance,
                         resources=resources, raise_on_error=False)  # fmt: skip
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.event_specific_data.error.to_string()
    assert "cases.yaml" in message and "dt-simple-01" in message and "'mc-rib'" in message
    assert (
        not (tmp_path / "results.sqlite").exists()
        or not ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}").list_runs()
    )


def test_code_location_validates_from_the_repo_root_without_config():
    """What `dagster dev -w workspace.yaml` loads, with no DAGSTER_HOME and no settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DAGSTER_", "EVAL_", "OPENAI_", "LANGFUSE_"))}  # fmt: skip
    dagster = Path(sys.executable).parent / "dagster"
    done = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Validation successful" in output
    assert "EnvVar" not in output and "not set" not in output


PLANTED_KEY = "sk-planted-secret-7f3a9c"


def test_failing_items_are_kept_and_the_key_never_leaks(env, monkeypatch):
    """Over real HTTP: utterances with 'hash brown' get a 400; every item is still there."""
    instance, resources, tmp_path = env
    (tmp_path / "datasets" / "drive_thru" / "thresholds.yaml").write_text(
        "primary_metric: order_correctness\n"
    )

    def fault(body):
        text = " ".join(str(m.get("content")) for m in body["messages"] if m["role"] == "user")
        return 400 if "hash brown" in text.lower() else None

    with LocalOpenAIServer(fault=fault) as server:
        monkeypatch.setenv("TEST_LLM_KEY", PLANTED_KEY)
        resources = {**resources, "llm": LLMResource(
            base_url=server.base_url, api_key=EnvVar("TEST_LLM_KEY"), model="gpt-4o-mini"
        )}  # fmt: skip
        result = evaluate(instance, resources, "v1", tier="full")
        assert server.app.state.stats["faults"] > 0
    # a refused request is not the agent's failure: the run stops at items_measured
    assert not result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["items_measured"] is False
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    (run,) = store.list_runs(suite="drive_thru")
    outputs = store.read_outputs(run.run_id)
    assert len(outputs) == 47
    failed = [o for o in outputs if o.error]
    assert failed and all("400" in o.error for o in failed)
    scores = store.read_scores(run.run_id)
    assert len(scores) == 47 * 3
    assert all(s.value == 0.0 for s in scores if s.item_id in {o.item_id for o in failed})
    assert store.read_summary(run.run_id).n_errors == len(failed)
    # the planted key appears nowhere: event log (metadata, logs), run records, store file
    events = instance.all_logs(result.run_id)
    assert PLANTED_KEY not in "".join(repr(e) for e in events)
    assert PLANTED_KEY not in repr(run) + repr(run.model_params)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]  # store, WAL, Dagster storage
    assert any(p.name.startswith("results.sqlite") for p in written)
    assert not [p for p in written if PLANTED_KEY.encode() in p.read_bytes()]


def test_gate_fails_a_worse_version_passes_itself_and_refuses_a_changed_dataset(env):
    instance, resources, tmp_path = env
    baseline = evaluate(instance, resources, "v1", tier="full")
    assert baseline.success
    worse = evaluate(instance, resources, "v2", tier="full")
    assert worse.success  # the gate's finding, not the run's failure
    assert instance.get_run_by_id(worse.run_id).tags["eval/verdict"] == "FAIL"
    gate = checks(worse)["paired_gate"]
    assert not gate.passed and gate.severity.value == "ERROR"
    # it leads with the metric that decided it, its Δ and interval
    lead = (f"FAIL — drive_thru v2: tool_call_accuracy Δ "
            f"{gate.metadata['drive_thru.tool_call_accuracy Δ'].value:+.3f} "
            f"{gate.metadata['tool_call_accuracy CI'].value}; margin 0.15")  # fmt: skip
    assert gate.description.startswith(lead), gate.description
    meta = gate.metadata  # every number named by its suite and metric
    assert meta["partition"].value == "drive_thru v2" and meta["outcome"].value == "FAIL"
    assert meta["drive_thru.tool_call_accuracy Δ"].value < 0
    decided_at = meta["drive_thru.tool_call_accuracy n"].value  # the pairs up to WORSE
    assert 5 <= decided_at <= 47
    assert meta["tool_call_accuracy CI"].value.startswith("[-")
    assert "delta" not in meta and "ci_high" not in meta
    assert "dt-" in meta["worse_items"].value  # ids of the items that got worse
    categories = checks(worse)["category_deltas"].metadata
    assert "drive_thru.not_on_menu Δ" in categories
    assert categories["drive_thru.not_on_menu n"].value >= 5
    _, message = verdict_logged(instance, worse.run_id)
    # the sequential gate's evidence: each metric's Δ and confidence interval, how many pairs
    # (the pairs drawn first follow the agent's fingerprint, installed packages included, so
    # the Δ up to the decision is the one the metadata shows, not a figure fixed here)
    shown = f"tool_call_accuracy: Δ {meta['drive_thru.tool_call_accuracy Δ'].value:+.3f}"
    assert "paired_gate" in message and shown in message, message
    assert meta["drive_thru.tool_call_accuracy Δ"].value <= -0.3  # v2 loses most tool calls
    assert f"after {decided_at} pairs: worse" in message  # (the pairs after it: no evidence)
    same = evaluate(instance, resources, "v1", tier="full")
    found = checks(same)
    assert same.success and found["paired_gate"].passed
    # the sequential gate decides pass/fail metrics itself: binary_gate tests nothing
    assert "binary_gate" not in found
    assert found["paired_gate"].metadata["baseline_run_id"].value != "none"
    pictures = materialized(same, "eval_summary")
    assert pictures["trend_chart"].value.startswith("![order_correctness trend](data:image/png")
    assert "category_delta_chart" in pictures
    # the same pictures as tables short enough for Dagster to show inline
    assert len(pictures["trend"].value) < 1000 and "| v1 |" in pictures["trend"].value
    assert "| not_on_menu |" in pictures["category_change"].value
    cases = tmp_path / "datasets" / "drive_thru" / "cases.yaml"
    cases.write_text(cases.read_text().replace("I'll have an Egg McMuffin", "An Egg McMuffin"))
    changed = evaluate(instance, resources, "v2", tier="full")  # against v1 on the old cases
    gate = checks(changed)["paired_gate"]
    # a baseline it cannot be compared with: ERROR, the one verdict that fails the run
    assert not changed.success and gate.severity.value == "ERROR"
    assert instance.get_run_by_id(changed.run_id).tags["eval/verdict"] == "ERROR"
    assert gate.description.startswith("FAIL — drive_thru v2: not comparable: dataset changed")
    # v1's own run on the new cases is not compared with v1's on the old ones (that was
    # ERROR, never a baseline, and every later run "not comparable"): it becomes the baseline
    rebased = evaluate(instance, resources, "v1", tier="full")
    assert "paired_gate" not in checks(rebased)  # tested nothing: "Skipped"
    untested = materialized(rebased, "eval_summary")["checks_not_tested"].value
    assert ("**paired_gate**: no baseline on these cases yet: the previous run of v1"
            in untested), untested  # fmt: skip


def test_the_run_config_takes_every_run_option_as_the_cli_does(env):
    """A baseline asked for in the run config must exist, as with `--baseline`: the step
    fails before any model call and records no run (evaluation.with_baseline)."""
    instance, resources, tmp_path = env
    result = evaluate(instance, resources, "v1", baseline_label="nightly")
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "has no label 'nightly'" in str(failure.event_specific_data.error)
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    assert store.list_runs(suite="drive_thru") == []


def test_behavioural_suite_materializes_with_axes_and_tools_table(env):
    instance, resources, _ = env
    result = evaluate(instance, resources, "v1", suite="product_discovery")
    assert result.success
    meta = materialized(result, "eval_summary")
    for axis in ("groundedness", "correctness", "completeness", "overall"):
        assert meta[f"mean_{axis}"].value == 1.0
    assert "search\\_products" in meta["tools_called_vs_expected"].value
    # Dagster plots each numeric key with partitions on the x-axis: keyed by suite, a plot
    # is one suite's values (before: product_discovery/v2's mean joined order_management/v1's)
    raw = result.asset_materializations_for_node("eval_summary")[0].metadata
    numbers = [k for k, v in raw.items() if isinstance(v, FloatMetadataValue | IntMetadataValue)]
    assert numbers and all(k.startswith("product_discovery.") for k in numbers), numbers
    assert raw["product_discovery.primary_value"].value == 1.0 and "verdict" in raw


def test_research_suite_shows_per_step_survival(env):
    instance, resources, _ = env
    result = evaluate(instance, resources, "v2", suite="research")
    meta = materialized(result, "eval_summary")
    assert "| step | items | passed | share |" in meta["per_step_survival"].value
    assert meta["mean_survived_until"].value < 1.0


def test_an_unserved_model_fails_the_step_before_anything_is_written(env):
    instance, resources, tmp_path = env
    with LocalOpenAIServer() as server:
        resources = {**resources, "llm": LLMResource(
            base_url=server.base_url, api_key="sk-test", model="gpt-5-typo"
        )}  # fmt: skip
        result = evaluate(instance, resources, "v1")
        assert server.requests == 0
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    cause = failure.step_failure_data.error.cause
    assert cause.cls_name == "ModelUnavailable" and "'gpt-5-typo'" in cause.message
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    assert store.list_runs() == []


def test_errors_by_kind_reach_the_dagster_metadata(env):
    from eval_pipeline_tests.integration.test_verdicts import refuse_some

    instance, resources, _ = env
    with LocalOpenAIServer(fault=refuse_some) as server:
        resources = {**resources, "llm": LLMResource(base_url=server.base_url,
                                                     api_key="none", model="offline")}  # fmt: skip
        result = evaluate(instance, resources, "v1", tier="full")
    for node in ("agent_run_outputs", "eval_summary"):
        meta = materialized(result, node)
        table = meta["errors_by_kind"].value
        assert "HTTP 400 server\\_error" in table and "maximum context length" in table, node
        assert meta["errors_HTTP 404 server_error"].value >= 1


def test_a_budget_in_the_run_config_stops_the_dagster_run_and_is_never_a_pass(env):
    """max_calls in the run config (the same RunOptions field as --max-calls): the shard
    starts no item once the run has spent it, collect_outputs accepts the items it left
    unstarted, and the run — its thresholds checked on a few cases, no gate — is UNDECIDED:
    it blocks (on_undecided: fail, exit 3), says why at ERROR in its log, and is tagged so,
    but it is not a failed Dagster run with a stack trace."""
    instance, resources, tmp_path = env
    stopped = evaluate(instance, resources, "v1", tier="full", suite="order_management",
                       max_calls=3, concurrency=1)  # fmt: skip
    assert stopped.success
    assert instance.get_run_by_id(stopped.run_id).tags["eval/verdict"] == "UNDECIDED"
    level, said = verdict_logged(instance, stopped.run_id)
    assert level == "WARNING" and "UNDECIDED — the gate could not tell; it blocks" in said
    summary = next(e for e in stopped.get_asset_materialization_events()
                   if e.asset_key.path == ["eval_summary"]).materialization.metadata  # fmt: skip
    assert summary["verdict"].value == "UNDECIDED"
    assert summary["budget"].value.startswith("--max-calls 3 reached (")
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    (run,) = store.list_runs(suite="order_management")
    assert run.stopped and 1 <= len(store.read_outputs(run.run_id)) < 32


def test_a_dagster_run_reads_its_cases_once(env, monkeypatch):
    """plan_shards reads the suite's cases; the shards, item_scores and eval_summary get
    them with the run reference (before: read again in every step, three times or more)."""
    from eval_pipeline.core.suites.suite import Suite

    instance, resources, _ = env
    reads, load = [], Suite.load_cases

    def counted(self, *args, **kwargs):
        reads.append(self.name)
        return load(self, *args, **kwargs)

    materialize([golden_dataset], partition_key="order_management", instance=instance,
                resources=resources)  # fmt: skip
    add_partitions(instance, [EvalPartition("order_management", "v1")])
    monkeypatch.setattr(Suite, "load_cases", counted)
    result = materialize(
        [golden_dataset, *ASSETS.evaluation], selection=ASSETS.evaluation,
        partition_key=EvalPartition("order_management", "v1").key,
        instance=instance, resources=resources,
        run_config={"ops": {"agent_run_outputs": {"config": {"tier": "full", "shards": 2}}}},
    )  # fmt: skip
    assert result.success
    assert reads == ["order_management"]


def test_descriptions_read_as_markdown():
    """Dagster shows descriptions as Markdown: golden_dataset's said ``dataset: langfuse:…``
    with its double backticks (a docstring in reST)."""
    from eval_pipeline.defs import build_definitions
    from eval_pipeline_tests.helpers import EXAMPLES

    defs = build_definitions(EXAMPLES / "eval-pipeline.yaml")
    graph = defs.resolve_asset_graph()
    texts = [graph.get(key).description or "" for key in graph.get_all_asset_keys()]
    texts += [spec.description or "" for asset in defs.assets or []
              for spec in getattr(asset, "check_specs", None) or []]  # fmt: skip
    assert texts and not [t for t in texts if "``" in t]
