"""prompt_label_sensor and nightly_full_eval against the local registry on a test instance."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import (
    SkipReason,
    build_schedule_context,
    build_sensor_context,
    instance_for_test,
)

from eval_pipeline.core.prompts.label_moves import (
    SensorCursor,
    WatchedPrompt,
    current_state,
    plan_requests,
)
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry
from eval_pipeline_tests.helpers import (
    EXAMPLES,
    SUITE_NAMES,
    copy_project,
    definitions,
    eval_job,
    eval_resources,
    sensor_tick,
)

PROMPT = "drive-thru/orchestrator"
WATCHED = [WatchedPrompt("drive_thru", PROMPT, ("production", "staging"))]


def never(*_):
    return False


def test_first_tick_requests_only_versions_never_evaluated():
    state = {"drive_thru": {"production": 1, "staging": 2}}
    requests, cursor = plan_requests(
        None, state, WATCHED, evaluated=lambda s, v, tier: (v, tier) == (1, "full")
    )
    assert [(r.version, r.tier) for r in requests] == [(2, "smoke")]
    assert requests[0].moves[0].old is None
    assert cursor.labels == state and cursor.seq == 1


def test_a_moved_label_requests_one_run_and_an_unchanged_state_none():
    before = SensorCursor({"drive_thru": {"production": 1, "staging": 2}}, seq=4)
    state = {"drive_thru": {"production": 1, "staging": 3}}
    requests, cursor = plan_requests(before, state, WATCHED, evaluated=never)
    assert len(requests) == 1
    request = requests[0]
    assert (request.suite, request.version, request.tier) == ("drive_thru", 3, "smoke")
    assert request.tags()["eval/label"] == "staging"
    assert request.tags()["eval/from_version"] == "v2"
    assert request.run_key == "prompt-label:drive_thru:v3:smoke:5"
    again, cursor2 = plan_requests(cursor, state, WATCHED, evaluated=never)
    assert again == [] and cursor2.seq == cursor.seq


def test_promotion_of_two_labels_to_one_version_is_one_full_run():
    before = SensorCursor({"drive_thru": {"production": 1, "staging": 2}})
    state = {"drive_thru": {"production": 3, "staging": 3}}
    requests, _ = plan_requests(before, state, WATCHED, evaluated=never)
    assert [(r.version, r.tier, len(r.moves)) for r in requests] == [(3, "full", 2)]


def test_removed_label_requests_nothing_and_bad_cursor_is_a_first_tick():
    before = SensorCursor({"drive_thru": {"production": 1, "staging": 2}})
    requests, cursor = plan_requests(
        before, {"drive_thru": {"production": 1}}, WATCHED, evaluated=never
    )
    assert requests == [] and cursor.labels == {"drive_thru": {"production": 1}}
    assert SensorCursor.loads("not json") is None
    assert SensorCursor.loads(cursor.dumps()) == cursor


def test_current_state_projects_the_registry_snapshot_on_suites():
    snapshot = {PROMPT: {"production": 4, "staging": 5, "canary": 6}, "other": {"production": 1}}
    assert current_state(WATCHED, snapshot) == {"drive_thru": {"production": 4, "staging": 5}}


@pytest.fixture
def env(tmp_path):
    project = copy_project(tmp_path)
    resources = eval_resources(tmp_path, project=project)
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        yield instance, resources, LocalPromptRegistry(project.parent / "prompts"), project


def tick(instance, resources, cursor=None, project=None):
    return sensor_tick(instance, resources, cursor, project=project)[0]


def partitions(instance) -> list[str]:
    return instance.get_dynamic_partitions("suite_version")


def test_sensor_moves_label_adds_partition_runs_once_and_the_run_lands(env):
    instance, resources, registry, project = env
    first = tick(instance, resources, project=project)
    # every suite's production (full) and staging (smoke) version was never evaluated
    expected = [
        (suite, v, tier) for suite in SUITE_NAMES for v, tier in (("v1", "full"), ("v2", "smoke"))
    ]
    got = [
        (r.tags["eval/suite"], r.tags["eval/to_version"], r.tags["eval/tier"])
        for r in first.run_requests
    ]
    assert sorted(got) == sorted(expected)
    assert set(partitions(instance)) == {f"{s}/{v}" for s in SUITE_NAMES for v in ("v1", "v2")}

    quiet = tick(instance, resources, first.cursor, project)
    assert quiet.run_requests == [] and "no watched label moved" in quiet.skip_reason.skip_message

    new = registry.add(PROMPT, EXAMPLES / "prompts" / PROMPT / "v1.yaml")
    registry.set_label(PROMPT, new.version, "staging")
    moved = tick(instance, resources, quiet.cursor, project)
    # one run per suite of that prompt: the single-turn suite and the conversations
    assert sorted(r.tags["eval/suite"] for r in moved.run_requests) == [
        "drive_thru", "drive_thru_conversations"
    ]  # fmt: skip
    request = next(r for r in moved.run_requests if r.tags["eval/suite"] == "drive_thru")
    assert request.partition_key == f"drive_thru/v{new.version}"
    assert request.tags["eval/label"] == "staging"
    assert request.tags["eval/from_version"] == "v2"
    assert request.tags["eval/to_version"] == f"v{new.version}"
    assert request.tags["eval/tier"] == "smoke"
    # Partitions only where the version exists: the prompt's two suites, no other suite
    # (before: one version dimension shared by every suite made research v3 and the rest,
    # "Missing" partitions that match no prompt version)
    added = set(partitions(instance)) - {f"{s}/{v}" for s in SUITE_NAMES for v in ("v1", "v2")}
    assert added == {f"drive_thru/v{new.version}", f"drive_thru_conversations/v{new.version}"}
    assert tick(instance, resources, moved.cursor, project).run_requests == []

    # The requested run, as the daemon would launch it (golden_dataset never materialized).
    job = eval_job(resources, project)
    result = job.execute_in_process(
        partition_key=request.partition_key,
        run_config=request.run_config,
        tags=request.tags,
        instance=instance,
    )
    assert result.success
    store = resources["results_store"].open()
    runs = store.list_runs(suite="drive_thru", prompt_version=f"v{new.version}")
    assert [(r.status, r.tier, r.prompt_hash) for r in runs] == [
        ("complete", "smoke", new.content_hash)
    ]
    assert store.read_summary(runs[0].run_id).n_cases == 11

    # A sensor starting from scratch (no cursor) skips what the store shows as evaluated.
    fresh = tick(instance, resources, project=project)
    assert [
        (r.tags["eval/suite"], r.tags["eval/to_version"], r.tags["eval/tier"])
        for r in fresh.run_requests
        if r.tags["eval/suite"] == "drive_thru"
    ] == [("drive_thru", "v1", "full")]


def test_registry_outage_skips_with_the_cause_and_keeps_the_cursor(env):
    instance, resources, registry, project = env
    first = tick(instance, resources, project=project)
    registry.labels_file.write_text("drive-thru/orchestrator: [not, a, mapping]\n")
    sensor = definitions(resources, project).resolve_sensor_def("prompt_label_sensor")
    with build_sensor_context(
        instance=instance, cursor=first.cursor, resources=resources
    ) as context:
        result = sensor(context)
        assert isinstance(result, SkipReason)
        assert "unavailable" in result.skip_message and "labels.yaml" in result.skip_message
        assert context.cursor == first.cursor


def test_nightly_schedule_requests_the_production_version_of_every_suite(env):
    instance, resources, _, project = env
    nightly_full_eval = definitions(resources, project).resolve_schedule_def("nightly_full_eval")
    with build_schedule_context(
        instance=instance,
        scheduled_execution_time=datetime(2026, 11, 22, 2, 0, tzinfo=UTC),
        resources=resources,
    ) as context:
        requests = list(nightly_full_eval(context))
    assert [r.run_key for r in requests] == [f"nightly:2026-11-22:{s}" for s in SUITE_NAMES]
    request = requests[0]
    assert request.partition_key == f"{SUITE_NAMES[0]}/v1"
    config = request.run_config["ops"]["agent_run_outputs"]["config"]
    assert (config["tier"], config["cache"]) == ("full", "refresh")  # nightly measures afresh
    assert set(partitions(instance)) == {f"{s}/v1" for s in SUITE_NAMES}


def test_a_version_evaluated_from_the_cli_is_a_partition_of_the_instance(env, monkeypatch):
    """Before: the sensor skipped versions the store showed as evaluated, so a version
    evaluated from the CLI never became a partition and `dagster asset materialize
    --partition …` for it failed with DagsterUnknownPartitionError. Now the first tick adds
    every labelled version, and the CLI adds the one it evaluated."""
    from eval_pipeline import evaluate

    instance, resources, registry, project = env
    new = registry.add(PROMPT, EXAMPLES / "prompts" / PROMPT / "v1.yaml")
    registry.set_label(PROMPT, new.version, "production")
    monkeypatch.setenv("EVAL_RESULTS_URL", resources["results_store"].url)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # no instance: the CLI adds nothing
    for suite in ("drive_thru", "drive_thru_conversations"):  # the prompt's two suites
        assert evaluate(suite, project=project, prompt_version=new.version).verdict == "PASS"
    version = f"v{new.version}"
    assert not instance.has_dynamic_partition("suite_version", f"drive_thru/{version}")
    first = tick(instance, resources, project=project)
    assert version not in {r.tags["eval/to_version"] for r in first.run_requests}  # evaluated
    assert instance.has_dynamic_partition("suite_version", f"drive_thru/{version}")


def test_the_cli_adds_the_version_it_evaluated_to_the_configured_instance(tmp_path):
    import os
    import subprocess
    import sys

    from dagster import DagsterInstance

    from eval_pipeline_tests.helpers import CONFIG_ENV

    project = copy_project(tmp_path)
    home = tmp_path / "dagster_home"
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    env |= {"DAGSTER_HOME": str(home), "EVAL_HOME": str(tmp_path / "eval_home"),
            "EVAL_PROJECT": str(project)}  # fmt: skip
    cli = str(Path(sys.executable).parent / "eval-pipeline")
    for args in (["instance"], ["run", "--suite", "drive_thru", "--prompt-version", "2",
                                 "--tier", "smoke"]):  # fmt: skip
        done = subprocess.run([cli, *args], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 1), done.stdout + done.stderr
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_dynamic_partitions("suite_version") == ["drive_thru/v2"]

    def materialize(asset: str, partition: str) -> subprocess.CompletedProcess:
        dagster = str(Path(sys.executable).parent / "dagster")
        return subprocess.run(
            [dagster, "asset", "materialize", "-m", "eval_pipeline.definitions", "--select",
             asset, "--partition", partition],
            env=env, capture_output=True, text=True, timeout=300, cwd=project.parent,
        )  # fmt: skip

    golden = materialize("golden_dataset", "drive_thru")
    assert golden.returncode == 0, golden.stderr[-2000:]
    outputs = materialize("agent_run_outputs", "drive_thru/v2")
    assert outputs.returncode == 0, outputs.stderr[-2000:]
    assert "DagsterUnknownPartitionError" not in outputs.stderr


def test_instance_moves_old_suite_by_version_partitions_to_suite_version(tmp_path):
    """An instance made before suite/version partitions has a prompt_version dimension
    shared by every suite and materializations under "v1|drive_thru". `eval-pipeline
    instance` adds a partition for each evaluated suite × version (the old keys' and the
    results store's), none for the combinations never run, and drops the old dimension."""
    import os
    import subprocess
    import sys

    from dagster import AssetMaterialization, DagsterInstance

    from eval_pipeline_tests.helpers import CONFIG_ENV

    project = copy_project(tmp_path)
    home = tmp_path / "dagster_home"
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    env |= {"EVAL_HOME": str(tmp_path / "eval_home"), "EVAL_PROJECT": str(project)}
    cli = str(Path(sys.executable).parent / "eval-pipeline")

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess:
        done = subprocess.run([cli, *args], env={**env, **extra}, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert done.returncode in (0, 1), done.stdout + done.stderr
        return done

    run("run", "--suite", "research", "--prompt-version", "2", "--tier", "smoke")  # no instance
    run("instance", DAGSTER_HOME=str(home))  # writes dagster.yaml: an instance of its own
    with DagsterInstance.from_config(str(home)) as instance:  # as the old code left it
        for key in instance.get_dynamic_partitions("suite_version"):
            instance.delete_dynamic_partition("suite_version", key)
        instance.add_dynamic_partitions("prompt_version", ["v1", "v2"])
        instance.report_runless_asset_event(
            AssetMaterialization("eval_summary", partition="v1|drive_thru")
        )
    said = run("instance", DAGSTER_HOME=str(home)).stdout
    assert "added 2 suite/version partitions (drive_thru/v1, research/v2)" in said, said
    assert "removed the old prompt_version dimension (2 keys)" in said, said
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_dynamic_partitions("suite_version") == ["drive_thru/v1", "research/v2"]
        assert instance.get_dynamic_partitions("prompt_version") == []
    assert "Partitions:" not in run("instance", DAGSTER_HOME=str(home)).stdout  # idempotent


def test_the_nightly_ticked_twice_on_one_day_runs_each_suite_once(env):
    """A schedule's run key dedupes only the ticks of one scheduled time: a second tick on
    the same day (a cron that ticks twice, a changed timezone) launched every suite again.
    Now a suite the nightly already ran that day is skipped; the next day runs again."""
    from dagster._core.test_utils import create_run_for_test

    instance, resources, _, project = env
    nightly_full_eval = definitions(resources, project).resolve_schedule_def("nightly_full_eval")

    def tick(at: datetime):
        with build_schedule_context(instance=instance, scheduled_execution_time=at,
                                    resources=resources) as context:  # fmt: skip
            result = nightly_full_eval(context)
        if isinstance(result, SkipReason):
            return result
        requests = list(result)
        for request in requests:  # launched, as the daemon does: the run carries its tags
            create_run_for_test(instance, job_name="eval_job", tags=request.tags)
        return requests

    first = tick(datetime(2026, 11, 22, 2, 0, tzinfo=UTC))
    assert sorted(r.tags["eval/suite"] for r in first) == sorted(SUITE_NAMES)
    again = tick(datetime(2026, 11, 22, 14, 0, tzinfo=UTC))
    assert isinstance(again, SkipReason), again
    assert again.skip_message == "every suite already ran on 2026-11-22"
    assert len(instance.get_runs()) == len(SUITE_NAMES)  # one run per suite that day
    next_day = tick(datetime(2026, 11, 23, 2, 0, tzinfo=UTC))
    assert len(next_day) == len(SUITE_NAMES)
