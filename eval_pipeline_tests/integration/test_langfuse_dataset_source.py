"""A suite whose ``dataset:`` is ``langfuse:NAME[@VERSION]`` runs on that Langfuse
dataset's items, validated as case files are (issue 24 item 5)."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import pytest

from eval_pipeline.core.suites.cases import (
    DatasetError,
    LangfuseDatasetRef,
    dataset_version,
    parse_dataset_ref,
)
from eval_pipeline.defs.partitions import EvalPartition, add_partitions
from eval_pipeline.integrations.langfuse_datasets import (
    dataset_name,
    sync_dataset,
)
from eval_pipeline.integrations.services import Services
from eval_pipeline_tests.helpers import suite as project_suite
from eval_pipeline_tests.langfuse_rules import V3, V4
from eval_pipeline_tests.langfuse_server import LangfuseTestServer

NAME = dataset_name("drive_thru")


@pytest.fixture(params=[V3, V4], ids=lambda v: f"langfuse-{v.version}")
def synced(request):
    """A server holding the drive-thru cases as a Langfuse dataset (as a team would have
    curated it), and the local suite they came from."""
    with LangfuseTestServer(version=request.param) as srv:
        local = project_suite("drive_thru")
        sync_dataset(srv.client(), "drive_thru", local.load_cases())
        yield srv, local


def on_langfuse(server, local, ref: str = f"langfuse:{NAME}"):
    services = Services(server.settings(), local.dataset_dir)
    return services.suite(dataclasses.replace(local, dataset_ref=parse_dataset_ref(ref)))


def test_parse_dataset_ref():
    assert parse_dataset_ref("evals/support") is None
    assert parse_dataset_ref("langfuse:a/b") == LangfuseDatasetRef("a/b")
    pinned = parse_dataset_ref("langfuse:a@b@2026-01-31T00:00:00Z")
    assert pinned == LangfuseDatasetRef("a@b", "2026-01-31T00:00:00Z")
    assert str(pinned) == "langfuse:a@b@2026-01-31T00:00:00Z"
    for bad in ("langfuse:", "langfuse:x@yesterday", "langfuse:x@2026-01-31T00:00:00"):
        with pytest.raises(DatasetError, match="langfuse:NAME@2026-01-31T00:00:00Z"):
            parse_dataset_ref(bad)


def test_a_suite_runs_on_the_langfuse_items_as_on_its_files(synced):
    server, local = synced
    remote = on_langfuse(server, local)
    cases, mine = remote.load_cases(), local.load_cases()
    assert sorted(c.id for c in cases) == sorted(c.id for c in mine)
    # same content, same dataset version: the memo and the gate see the same dataset
    assert dataset_version(cases) == dataset_version(mine)
    assert {c.id: c.tier for c in cases} == {c.id: c.tier for c in mine}
    assert remote.dataset_origin == f"langfuse:{NAME}"


def test_archived_items_are_not_run_and_change_the_dataset_version(synced):
    server, local = synced
    mine = local.load_cases()
    sync_dataset(server.client(), "drive_thru", mine[1:])  # archives the first
    cases = on_langfuse(server, local).load_cases()
    assert mine[0].id not in {c.id for c in cases} and len(cases) == len(mine) - 1
    assert dataset_version(cases) != dataset_version(mine)


def test_an_unknown_dataset_names_the_suite_and_the_dataset(synced):
    server, local = synced
    with pytest.raises(DatasetError) as err:
        on_langfuse(server, local, "langfuse:nope").load_cases()
    assert "suite 'drive_thru'" in str(err.value) and "'langfuse:nope'" in str(err.value)
    assert "404" in str(err.value)


def test_an_item_without_input_names_the_item_and_the_field(synced):
    server, local = synced
    item = next(iter(server.state.dataset_items.values()))
    item["input"] = None
    with pytest.raises(DatasetError) as err:
        on_langfuse(server, local).load_cases()
    assert f"item '{item['id']}': field 'input': missing" in str(err.value)


def test_an_item_that_fails_case_validation_names_the_item_and_the_field(synced):
    server, local = synced
    item = next(iter(server.state.dataset_items.values()))
    item["metadata"] = {k: v for k, v in item["metadata"].items() if k != "tier"}
    with pytest.raises(DatasetError) as err:
        on_langfuse(server, local).load_cases()
    assert f"item '{item['id']}' case '{item['metadata']['case_id']}': field 'metadata.tier'" in (
        str(err.value)
    )


def test_without_langfuse_a_langfuse_suite_says_what_to_set():
    local = project_suite("drive_thru")
    suite = Services(None, local.dataset_dir).suite(
        dataclasses.replace(local, dataset_ref=LangfuseDatasetRef("x"))
    )
    with pytest.raises(DatasetError, match="LANGFUSE_PUBLIC_KEY") as err:
        suite.load_cases()
    assert "suite 'drive_thru'" in str(err.value) and "'langfuse:x'" in str(err.value)


def test_a_pinned_version_a_server_ignores_is_refused_not_run_on_the_latest():
    """A v3 server, without dataset versions, ignores ``version``: the items it answers
    were created after the pinned time, which gives it away."""
    with LangfuseTestServer(version=V3) as server:
        local = project_suite("drive_thru")
        sync_dataset(server.client(), "drive_thru", local.load_cases())
        suite = on_langfuse(server, local, f"langfuse:{NAME}@2001-01-01T00:00:00Z")
        with pytest.raises(DatasetError, match="does not serve dataset versions"):
            suite.load_cases()


def test_a_pinned_version_runs_on_the_items_as_they_were_then():
    """v4 serves dataset versions: a suite pinned to a time runs on the items as they were
    then, whatever a curator archived or edited since; unpinned, on the latest."""
    import time
    from datetime import UTC, datetime

    with LangfuseTestServer(version=V4) as server:
        local = project_suite("drive_thru")
        cases = local.load_cases()
        sync_dataset(server.client(), "drive_thru", cases)
        time.sleep(0.01)
        pin = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        time.sleep(0.01)
        edited = cases[1].model_copy(update={"input": {"customer_utterance": "just water"}})
        sync_dataset(server.client(), "drive_thru", [edited, *cases[2:]])  # one archived
        pinned = on_langfuse(server, local, f"langfuse:{NAME}@{pin}").load_cases()
        latest = on_langfuse(server, local).load_cases()
    assert dataset_version(pinned) == dataset_version(cases)
    assert dataset_version(latest) == dataset_version([edited, *cases[2:]])


@contextmanager
def suite_on_langfuse(monkeypatch, tmp_path, dataset: str, version=V4):
    """The examples' project with drive_thru reading its cases from the Langfuse dataset
    ``dataset``, a test server of ``version`` serving its prompt, and the CLI pointed at
    both; the dataset is the caller's to fill."""
    import yaml
    from langfuse._client.resource_manager import LangfuseResourceManager

    from eval_pipeline_tests.helpers import EXAMPLES, PROJECT

    config = yaml.safe_load(PROJECT.read_text())
    config["suites"] = {"drive_thru": {
        **config["suites"]["drive_thru"], "dataset": f"langfuse:{dataset}",
        "thresholds": "datasets/drive_thru/thresholds.yaml",
    }}  # fmt: skip
    project = tmp_path / "project"
    project.mkdir()
    for name in ("eval_examples", "prompts", "datasets"):
        (project / name).symlink_to(EXAMPLES / name)
    (project / "eval-pipeline.yaml").write_text(yaml.safe_dump(config))
    with LangfuseTestServer(version=version) as srv:
        prompt = yaml.safe_load((EXAMPLES / "prompts/drive-thru/orchestrator/v1.yaml").read_text())
        srv.seed_prompt("drive-thru/orchestrator", prompt["prompt"], type=prompt["type"],
                        config=prompt.get("config"), labels=["production"])  # fmt: skip
        for name, value in srv.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("EVAL_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("EVAL_PROJECT", str(project / "eval-pipeline.yaml"))
        monkeypatch.delenv("EVAL_RESULTS_URL", raising=False)
        LangfuseResourceManager.reset()
        yield srv


@pytest.fixture
def langfuse_project(monkeypatch, tmp_path):
    """drive_thru on the Langfuse dataset synced from its folder (``suite_on_langfuse``)."""
    with suite_on_langfuse(monkeypatch, tmp_path, NAME) as srv:
        sync_dataset(srv.client(), "drive_thru", project_suite("drive_thru").load_cases())
        yield srv, tmp_path / "home"


def test_cli_runs_a_suite_on_a_langfuse_dataset_and_gates_only_the_same_version(
    langfuse_project,
):
    """End to end: the CLI runs drive_thru on the Langfuse items; once a curator archives
    an item, the dataset version differs, and the gate refuses to compare the runs: a run
    gated against the old one is "not comparable", an ERROR as the gate's rules say
    (docs/gate.md), never a pass; the same version's next run is not compared with its
    predecessor on the old items (it was: ERROR, so it could never become the baseline on
    the new ones) and becomes the baseline, saying so."""
    from click.testing import CliRunner

    from eval_pipeline.cli import main
    from eval_pipeline.core.store.results_store import ResultsStore

    server, home = langfuse_project
    first = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "full"])
    assert first.exit_code == 0, first.output
    store = ResultsStore(f"sqlite:///{home / 'results.sqlite'}")
    (run,) = store.list_runs(suite="drive_thru")
    mine = project_suite("drive_thru").load_cases()
    assert run.dataset_version == dataset_version(mine) and run.status == "complete"
    assert f"cases from the Langfuse dataset langfuse:{NAME}" in run.notes
    sync_dataset(server.client(), "drive_thru", mine[1:])  # archived in Langfuse
    against = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "full",
                                        "--baseline-run", run.run_id])  # fmt: skip
    assert against.exit_code == 2, against.output  # not comparable: ERROR, never a verdict
    assert "not comparable" in against.output and "dataset changed" in against.output
    second = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "full"])
    assert "not comparable" not in second.output, second.output
    assert f"no baseline on these cases yet: the previous run of v1, {run.run_id}, ran " \
           "other cases" in " ".join(second.output.split())  # fmt: skip
    newest = max(store.list_runs(suite="drive_thru"), key=lambda r: r.started_at)
    assert newest.dataset_version == dataset_version(mine[1:])
    assert newest.status == "complete" and newest.baseline_run_id is None


def test_cli_run_of_an_unknown_langfuse_dataset_is_exit_2_naming_it(langfuse_project):
    from click.testing import CliRunner

    from eval_pipeline.cli import main

    server, _ = langfuse_project
    server.state.datasets.pop(NAME)
    result = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "smoke"])
    assert result.exit_code == 2, result.output
    assert f"langfuse:{NAME}" in result.output and "no such dataset" in result.output


def test_the_golden_dataset_metadata_says_the_cases_come_from_langfuse(synced):
    from eval_pipeline.defs.evaluation.metadata import dataset_metadata

    server, local = synced
    remote = on_langfuse(server, local)
    metadata = dataset_metadata(remote, remote.load_cases())
    assert metadata["dataset_source"] == f"langfuse:{NAME}"
    assert dataset_metadata(local, local.load_cases())["dataset_source"] == str(local.dataset_dir)


def test_a_malformed_pin_in_the_project_file_names_the_suite_and_field(langfuse_project):
    import os
    from pathlib import Path

    from click.testing import CliRunner

    from eval_pipeline.cli import main

    path = Path(os.environ["EVAL_PROJECT"])
    path.write_text(path.read_text().replace(f"langfuse:{NAME}", f"langfuse:{NAME}@yesterday"))
    result = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "smoke"])
    assert result.exit_code == 2, result.output
    assert "suite 'drive_thru': field 'dataset'" in result.output
    assert "ISO 8601 UTC timestamp" in result.output


def test_dagster_evaluates_a_langfuse_suite_end_to_end(langfuse_project, tmp_path):
    """The Dagster evaluation (plan, shards, scores, summary: what the sensor and the
    nightly schedule start) reads a langfuse: suite's items through the services resource,
    as golden_dataset does. Before, every step after golden_dataset loaded the suite
    without Langfuse and failed ("Langfuse is not configured"); langfuse_dataset does not
    copy a team's own dataset into eval-pipeline/<suite>."""
    from dagster import instance_for_test, materialize

    from eval_pipeline.core.store.results_store import ResultsStore
    from eval_pipeline.defs.evaluation.assets import build_evaluation_assets
    from eval_pipeline.defs.partitions import build_partitions
    from eval_pipeline.defs.resources import LangfuseResource
    from eval_pipeline_tests.helpers import SUITE_NAMES, eval_resources

    server, _ = langfuse_project
    langfuse = LangfuseResource(public_key=server.public_key, secret_key=server.secret_key,
                                base_url=server.base_url)  # fmt: skip
    resources = eval_resources(tmp_path, project=tmp_path / "project" / "eval-pipeline.yaml",
                               langfuse=langfuse)  # fmt: skip
    assets = build_evaluation_assets(build_partitions(SUITE_NAMES))
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        add_partitions(instance, [EvalPartition("drive_thru", "v1")])
        synced = materialize([assets.golden_dataset, assets.langfuse_dataset],
                             partition_key="drive_thru", instance=instance,
                             resources=resources)  # fmt: skip
        mirrored = next(
            e
            for e in synced.get_asset_materialization_events()
            if e.asset_key.path == ["langfuse_dataset"]
        ).materialization.metadata
        assert mirrored["synced"].value is False
        assert mirrored["dataset_source"].value == f"langfuse:{NAME}"
        ran = materialize(
            [assets.golden_dataset, *assets.evaluation], selection=assets.evaluation,
            partition_key=EvalPartition("drive_thru", "v1").key,
            instance=instance, resources=resources, raise_on_error=False,
            run_config={"ops": {"agent_run_outputs": {"config": {"tier": "smoke"}}}},
        )  # fmt: skip
        assert ran.success
    (run,) = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}").list_runs(suite="drive_thru")
    assert run.status == "complete"
    assert run.dataset_version == dataset_version(project_suite("drive_thru").load_cases())


@pytest.mark.parametrize("version", [V3, V4], ids=lambda v: f"langfuse-{v.version}")
def test_a_run_on_a_teams_dataset_is_an_experiment_of_that_dataset(version, monkeypatch,
                                                                   tmp_path):  # fmt: skip
    """A team curates "support-golden" (its own item ids, our case ids in metadata): a run
    on it is linked to that dataset and its items, on v4 by the experiment span attributes,
    on v3 by dataset run items; no copy named eval-pipeline/<suite> is made in the team's
    project. Before, the run synced a copy and linked to it."""
    from click.testing import CliRunner

    from eval_pipeline.cli import main

    with suite_on_langfuse(monkeypatch, tmp_path, "support-golden", version) as srv:
        client = srv.client()
        client.create_dataset(name="support-golden")
        cases = project_suite("drive_thru").load_cases()
        for n, case in enumerate(cases):
            client.create_dataset_item(
                dataset_name="support-golden", id=f"team-item-{n}", input=case.input,
                expected_output=case.expected_output,
                metadata={"case_id": case.id, **case.metadata.model_dump()},
            )  # fmt: skip
        ran = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "smoke"])
        assert ran.exit_code == 0, ran.output
        srv.settle()
        team = {f"team-item-{n}" for n in range(len(cases))}
        assert set(srv.state.datasets) == {"support-golden"}  # no copy
        if version is V4:
            items = [o for o in srv.state.observations if o["experimentItemId"]]
            assert items and {o["experimentItemId"] for o in items} <= team
            dataset_id = srv.state.datasets["support-golden"]["id"]
            assert {o["_attributes"].get("langfuse.experiment.dataset.id")
                    for o in items} == {dataset_id}  # fmt: skip
        else:
            linked = srv.state.dataset_run_items
            assert linked and {i["datasetItemId"] for i in linked} <= team
