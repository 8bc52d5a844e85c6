"""The Langfuse paths end to end: the real SDK over real HTTP against LangfuseTestServer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import yaml
from dagster import (
    EnvVar,
    SkipReason,
    instance_for_test,
)

from eval_pipeline.core.prompts.labels import PromptError
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.defs.partitions import EvalPartition, add_partitions
from eval_pipeline.defs.resources import (
    LangfuseResource,
)
from eval_pipeline.integrations.langfuse_datasets import dataset_name, sync_dataset
from eval_pipeline.integrations.langfuse_prompts import LangfusePromptRegistry
from eval_pipeline.integrations.langfuse_scores import OUTBOX_KIND
from eval_pipeline.integrations.prompt_registry import RegistryUnavailable
from eval_pipeline_tests.helpers import (
    EXAMPLES,
    PROJECT,
    eval_job,
    eval_resources,
    materialized,
    sensor_tick,
)
from eval_pipeline_tests.helpers import suite as project_suite
from eval_pipeline_tests.langfuse_rules import V3, V4, V4_DUAL
from eval_pipeline_tests.langfuse_server import PROJECT_ID, LangfuseTestServer

PROMPT = "drive-thru/orchestrator"
PLANTED_SECRET = "sk-lf-planted-3e8d1b7c"


def local_version(version: int) -> dict:
    return yaml.safe_load((EXAMPLES / "prompts" / PROMPT / f"v{version}.yaml").read_text())


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("TEST_LANGFUSE_SECRET", PLANTED_SECRET)
    with LangfuseTestServer(secret_key=PLANTED_SECRET) as srv:
        v1, v2 = local_version(1), local_version(2)
        srv.seed_prompt(
            PROMPT, v1["prompt"], type=v1["type"], config=v1.get("config"), labels=["production"]
        )
        srv.seed_prompt(
            PROMPT, v2["prompt"], type=v2["type"], config=v2.get("config"), labels=["staging"]
        )
        yield srv


@pytest.fixture
def env(tmp_path, server):
    langfuse = LangfuseResource(
        public_key=server.public_key,
        secret_key=EnvVar("TEST_LANGFUSE_SECRET"),
        base_url=server.base_url,
    )
    resources = eval_resources(tmp_path, langfuse=langfuse)  # prompts come from Langfuse
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        yield instance, resources, tmp_path


def registry(server: LangfuseTestServer) -> LangfusePromptRegistry:
    return LangfusePromptRegistry(server.settings())


def test_registry_reads_versions_config_and_labels_across_pages(server):
    for i in range(130):  # more than one page of the listing
        server.seed_prompt(f"other/p{i:03d}", "hello {{name}}", labels=["production"])
    server.seed_prompt(
        "chatty",
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "{{q}}"}],
        type="chat",
        config={"temperature": 0.3},
        labels=["staging"],
    )
    assert server.client().auth_check()  # projects endpoint, Basic auth
    reg = registry(server)
    v1 = reg.get(PROMPT, 1)
    assert v1.type == local_version(1)["type"]
    assert v1.config == (local_version(1).get("config") or {})
    assert v1.content_hash == registry_hash(1)
    assert "production" in v1.labels
    chat = reg.get_by_label("chatty", "staging")
    assert chat.type == "chat" and chat.system_text() == "Be brief."
    assert chat.config["temperature"] == 0.3
    positions = reg.label_versions(["production", "staging"])
    assert positions[PROMPT] == {"production": 1, "staging": 2}
    assert len([n for n in positions if n.startswith("other/")]) == 130
    with pytest.raises(PromptError, match="no prompt"):
        reg.get(PROMPT, 99)
    server.outage = 503
    with pytest.raises(RegistryUnavailable, match="503"):
        reg.label_versions(["production"])


def registry_hash(version: int) -> str:
    from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry

    return LocalPromptRegistry(EXAMPLES / "prompts").get(PROMPT, version).content_hash


def test_label_move_in_langfuse_runs_once_and_scores_land_on_the_traces(env, server):
    instance, resources, tmp_path = env
    first, _ = sensor_tick(instance, resources)
    # never evaluated: production v1 (full) and staging v2 of each suite of this prompt
    drive_thru_suites = {"drive_thru", "drive_thru_conversations"}
    assert {r.tags["eval/suite"] for r in first.run_requests} == drive_thru_suites
    assert len(first.run_requests) == 2 * len(drive_thru_suites)

    v3 = server.seed_prompt(
        PROMPT, local_version(1)["prompt"], type=local_version(1)["type"],
        config={"temperature": 0.4},
    )  # fmt: skip
    server.client().update_prompt(name=PROMPT, version=v3, new_labels=["staging"])
    moved, _ = sensor_tick(instance, resources, first.cursor)
    assert {r.tags["eval/suite"] for r in moved.run_requests} == drive_thru_suites
    request = next(r for r in moved.run_requests if r.tags["eval/suite"] == "drive_thru")
    assert request.tags["eval/label"] == "staging"
    assert (request.tags["eval/from_version"], request.tags["eval/to_version"]) == ("v2", f"v{v3}")
    assert f"drive_thru/v{v3}" in instance.get_dynamic_partitions("suite_version")
    again, _ = sensor_tick(instance, resources, moved.cursor)
    assert again.run_requests == []

    server.outage = 503
    skipped, kept = sensor_tick(instance, resources, moved.cursor)
    assert isinstance(skipped, SkipReason) and "503" in skipped.skip_message
    assert kept == moved.cursor
    server.outage = None

    job = eval_job(resources)
    result = job.execute_in_process(
        partition_key=request.partition_key,
        run_config=request.run_config,
        tags=request.tags,
        instance=instance,
    )
    assert result.success
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    (run,) = store.list_runs(suite="drive_thru", prompt_version=f"v{v3}")
    assert run.status == "complete" and store.read_summary(run.run_id).n_cases == 11
    assert run.prompt_config == {"temperature": 0.4}  # the prompt's config reached the model
    assert run.model_params["temperature"] == 0.4
    meta = materialized(result, "eval_summary")
    assert meta["langfuse_scores_queued"].value == 0
    server.settle()  # Langfuse ingests asynchronously
    scores = store.read_scores(run.run_id)
    sent = [s for s in server.state.scores if s.get("metadata", {}).get("run_id") == run.run_id]
    assert len([s for s in sent if "traceId" in s]) == len(scores)
    # the means on the run's experiment (this server is v4: it groups experiments)
    assert {s["name"] for s in sent if "datasetRunId" in s} >= {"run_order_correctness"}
    roots = {o["traceId"] for o in server.state.observations if o.get("name") == "eval-drive_thru"}
    assert {s["traceId"] for s in sent if "traceId" in s} <= roots
    assert len(roots) == 11
    # below each item's root: the LangGraph run, recorded by the LangChain CallbackHandler
    children = [
        o
        for o in server.state.observations
        if o["traceId"] in roots and o.get("parentObservationId")
    ]
    assert {o["type"] for o in children} >= {"GENERATION"}
    root = next(o for o in server.state.observations if o.get("name") == "eval-drive_thru")
    assert "suite:drive_thru" in root["tags"] and root["sessionId"] == run.run_id
    # evaluation traces stay out of production dashboards: the SDK experiments' environment
    assert {o["environment"] for o in server.state.observations
            if o["traceId"] in roots} == {"sdk-experiment"}  # fmt: skip

    # the planted Langfuse secret appears nowhere we write
    assert PLANTED_SECRET not in "".join(repr(e) for e in instance.all_logs(result.run_id))
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in written if PLANTED_SECRET.encode() in p.read_bytes()]


def test_write_back_outage_is_queued_and_delivered_by_the_next_run(env, server):
    instance, resources, tmp_path = env
    add_partitions(instance, [EvalPartition("drive_thru", "v1")])
    job = eval_job(resources)
    key = EvalPartition("drive_thru", "v1").key
    config = {"ops": {"agent_run_outputs": {"config": {"tier": "smoke"}}}}
    # The prompt is fetched before the outage; the outage hits tracing and write-back.
    server.fail_paths = ("/api/public/ingestion", "/api/public/otel/v1/traces")
    failed = job.execute_in_process(partition_key=key, run_config=config, instance=instance)
    assert failed.success  # Langfuse being down never fails an evaluation
    meta = materialized(failed, "eval_summary")
    queued = meta["langfuse_scores_queued"].value
    assert queued > 0 and "503" in meta["langfuse_writeback_error"].value
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    assert len(store.queued(OUTBOX_KIND)) == queued

    server.fail_paths = ()
    again = job.execute_in_process(partition_key=key, run_config=config, instance=instance)
    meta = materialized(again, "eval_summary")
    assert meta["langfuse_scores_retried"].value == queued
    assert meta["langfuse_scores_queued"].value == 0
    assert store.queued(OUTBOX_KIND) == {}
    server.settle()
    ids = [s["id"] for s in server.state.scores]
    assert len(ids) == len(set(ids)) == 2 * queued


@pytest.fixture(params=[V3, V4], ids=lambda v: f"langfuse-{v.version}")
def any_server(request):
    """Each Langfuse release we support, as its defaults make it answer."""
    with LangfuseTestServer(version=request.param) as srv:
        yield srv


def test_dataset_sync_is_idempotent_and_archives_removed_cases(any_server):
    """The dataset's name holds a "/": it must reach the one-segment route encoded."""
    server, suite = any_server, project_suite("drive_thru")
    client, cases = server.client(), suite.load_cases()
    first = sync_dataset(client, "drive_thru", cases)
    assert first.counts() == {"created": 47, "updated": 0, "unchanged": 0, "archived": 0}
    assert server.requests[("GET", "/api/public/v2/datasets/{name}")] == 1
    second = sync_dataset(client, "drive_thru", cases)
    assert second.counts() == {"created": 0, "updated": 0, "unchanged": 47, "archived": 0}
    assert server.requests[("POST", "/api/public/v2/datasets")] == 1  # found the 2nd time
    items = [i for i in server.state.dataset_items.values()
             if i["datasetName"] == dataset_name("drive_thru")]  # fmt: skip
    assert len(items) == 47
    third = sync_dataset(client, "drive_thru", cases[1:])
    assert third.counts()["archived"] == 1
    archived = server.state.dataset_items[f"drive_thru:{cases[0].id}"]
    assert archived["status"] == "ARCHIVED"
    # added back: Langfuse lists no archived items, so it is "created" (reactivated)
    again = sync_dataset(client, "drive_thru", cases)
    assert again.counts() == {"created": 1, "updated": 0, "unchanged": 46, "archived": 0}
    assert server.state.dataset_items[f"drive_thru:{cases[0].id}"]["status"] == "ACTIVE"


def test_a_case_with_control_characters_stays_unchanged(any_server):
    """Langfuse strips control characters from stored items; comparing with what we sent
    would report the case "updated" on every sync."""
    from eval_pipeline.core.suites.cases import GoldenCase

    case = project_suite("drive_thru").load_cases()[0]
    odd = GoldenCase(id=case.id, metadata=case.metadata, expected_output=case.expected_output,
                     input={**case.input, "customer_utterance": "two\u0007 tacos\u0000"},
                     )  # fmt: skip
    client = any_server.client()
    assert sync_dataset(client, "drive_thru", [odd]).counts()["created"] == 1
    assert sync_dataset(client, "drive_thru", [odd]).counts()["unchanged"] == 1


def test_langfuse_trace_source_reads_what_each_version_serves(any_server, tmp_path):
    """v4: v2 observations in cursor pages of 1,000. v3 answers those 404 and serves v1
    observations in numbered pages of 100, without a root filter: a child named like its
    root is left out, a root started under a remote parent (distributed tracing) is kept."""
    from datetime import date

    from eval_pipeline.core.traces.observations import score_traces
    from eval_pipeline.integrations.langfuse_scores import trace_score_payloads, write_back
    from eval_pipeline.integrations.trace_sources import LangfuseTraceSource, LocalTraceSource

    server, day = any_server, date(2026, 11, 20)
    suite = project_suite("drive_thru")
    lines = (EXAMPLES / "datasets" / "drive_thru" / "traces" / f"{day}.jsonl").read_text()
    observations = [json.loads(line) for line in lines.splitlines()]
    filler = [{**o, "id": f"x{i}", "traceId": f"{i:032x}"} for i, o in enumerate(observations * 10)]
    child = {**observations[0], "id": "child", "parentObservationId": observations[0]["id"],
             "isRootObservation": False}  # fmt: skip
    remote_root = {**observations[0], "id": "remote", "traceId": "f" * 32,
                   "parentObservationId": "a" * 16, "isRootObservation": True}  # fmt: skip
    server.add_observations([*observations, *filler, child, remote_root])  # 1,321 roots
    remote = list(LangfuseTraceSource(server.settings()).traces(suite, day))
    ids = {r.observation_id for r in remote}
    assert len(remote) == 1321 and "child" not in ids and "remote" in ids
    if server.version is V4:  # the totals (2 pages of 1,000), then the roots (2 pages)
        assert server.requests[("GET", "/api/public/v2/observations")] == 4
    else:  # the version says v1: the day's traces of the name (14 pages of 100), then one
        # pass over the day's observations for the totals and the roots (14 pages)
        assert server.requests[("GET", "/api/public/v2/observations")] == 0
        assert server.requests[("GET", "/api/public/traces")] == 14
        assert server.requests[("GET", "/api/public/observations")] == 14
    expected = list(LocalTraceSource().traces(suite, day))
    by_id = {r.trace_id: r for r in remote}
    assert all(by_id[r.trace_id].output == r.output for r in expected)
    assert all(by_id[r.trace_id].metadata == r.metadata for r in expected)
    scores = score_traces(expected, suite.trace_evaluators)
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    report = write_back(server.settings(), store, trace_score_payloads(scores))
    assert report.queued == 0 and report.sent == len(scores)
    server.settle()
    assert {s["traceId"] for s in server.state.scores} == {r.trace_id for r in expected}


def test_a_production_trace_costs_what_its_generations_cost(any_server):
    """Langfuse records usage and cost on the generations under the root span, not on the
    root: a trace's tokens and cost are the sums over all of its observations (before, the
    root's own: no cost, and cost_within passed on nothing). Traces of the evaluation
    environment are our own runs, not production, and are left out."""
    from datetime import date

    from eval_pipeline.integrations.trace_sources import LangfuseTraceSource

    server, day, suite = any_server, date(2026, 11, 20), project_suite("drive_thru")

    def trace(n: int, environment: str = "production") -> list[dict]:
        trace_id, root = f"{n:032x}", f"{n:015x}r"
        at = f"2026-11-20T10:{n:02d}:00Z"
        common = {"traceId": trace_id, "environment": environment, "startTime": at}
        return [
            {**common, "id": root, "name": suite.trace_name, "type": "SPAN",
             "endTime": f"2026-11-20T10:{n:02d}:03Z", "input": {"q": n}, "output": {"a": n}},
            *[{**common, "id": f"{n:015x}{g}", "name": "ChatOpenAI", "type": "GENERATION",
               "parentObservationId": root,
               "usageDetails": {"input": 100, "output": 20, "total": 120},
               "costDetails": {"input": 0.001, "output": 0.0005, "total": 0.0015}}
              for g in range(3)],
            {**common, "id": f"{n:015x}t", "name": "lookup_menu", "type": "TOOL",
             "parentObservationId": root},
        ]  # fmt: skip

    server.add_observations([*trace(1), *trace(2), *trace(3, environment="sdk-experiment")])
    records = sorted(LangfuseTraceSource(server.settings()).traces(suite, day),
                     key=lambda r: r.trace_id)  # fmt: skip
    assert [r.trace_id for r in records] == [f"{1:032x}", f"{2:032x}"]
    for record in records:
        assert (record.input_tokens, record.output_tokens) == (300, 60)
        assert record.cost_usd == pytest.approx(0.0045)
        assert record.latency_ms == pytest.approx(3000)


def test_production_traces_are_chosen_by_the_traces_name_not_the_roots(any_server):
    """The suite names its traces by the trace's name (what Langfuse's trace list shows),
    which may differ from its root observation's (a LangGraph root is "LangGraph" under a
    trace the team named). On v3 the v1 observations API cannot filter on it, so the
    root's name stood for it: such a trace was missed, and a trace of another name whose
    root happened to bear the suite's name was taken."""
    from datetime import date

    from eval_pipeline.integrations.trace_sources import LangfuseTraceSource

    server, day, suite = any_server, date(2026, 11, 20), project_suite("drive_thru")

    def root(n: int, name: str, trace_name: str) -> dict:
        return {"id": f"{n:015x}r", "traceId": f"{n:032x}", "name": name,
                "traceName": trace_name, "type": "SPAN", "environment": "production",
                "startTime": f"2026-11-20T10:0{n}:00Z", "endTime": f"2026-11-20T10:0{n}:01Z",
                "input": {"q": n}, "output": {"a": n}}  # fmt: skip

    server.add_observations([root(1, "LangGraph", suite.trace_name),
                             root(2, suite.trace_name, "another-agent")])  # fmt: skip
    found = list(LangfuseTraceSource(server.settings()).traces(suite, day))
    assert [r.trace_id for r in found] == [f"{1:032x}"]


def test_the_test_server_refuses_a_filter_the_api_refuses(any_server):
    """GET /v2/observations validates ``filter`` (JSON, its types, operators and columns)
    and answers 400 naming the problem; on v3 the route itself is 404."""

    with any_server.settings().http() as http:
        for bad in (
            "[{",
            '[{"type": "string", "column": "nope", "operator": "=", "value": 1}]',
            '[{"type": "string", "column": "name", "operator": "any of", "value": 1}]',
        ):
            response = http.get("/api/public/v2/observations", params={"filter": bad})
            assert response.status_code == (400 if any_server.version is V4 else 404)


@pytest.fixture
def cli_env(server, monkeypatch, tmp_path):
    """The CLI configured for the test server through LANGFUSE_* variables."""
    from langfuse._client.resource_manager import LangfuseResourceManager

    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EVAL_PROJECT", str(PROJECT))
    monkeypatch.delenv("EVAL_RESULTS_URL", raising=False)
    LangfuseResourceManager.reset()
    return tmp_path / "home"


def test_cli_run_evaluates_the_langfuse_label(server, cli_env):
    from click.testing import CliRunner

    from eval_pipeline.cli import main

    result = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--label", "staging"])
    assert result.exit_code == 1, result.output  # staging = v2, the worse prompt
    store = ResultsStore(f"sqlite:///{cli_env / 'results.sqlite'}")
    (run,) = store.list_runs(suite="drive_thru")
    assert run.prompt_version == "v2" and run.status == "complete"
    server.outage = 503
    down = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "smoke"])
    assert down.exit_code == 2 and "503" in down.output


def test_cli_datasets_sync_twice_creates_nothing_new(server, cli_env):
    from click.testing import CliRunner

    from eval_pipeline.cli import main

    runner = CliRunner()
    first = runner.invoke(main, ["datasets", "sync", "--suite", "drive_thru"])
    assert first.exit_code == 0, first.output
    assert "47 created" in first.output
    second = runner.invoke(main, ["datasets", "sync", "--suite", "drive_thru"])
    assert "0 created, 0 updated, 47 unchanged, 0 archived" in " ".join(second.output.split())
    assert len(server.state.dataset_items) == 47
    unknown = runner.invoke(main, ["datasets", "sync", "--suite", "nope"])
    assert unknown.exit_code == 2 and "unknown suite" in unknown.output
    server.outage = 503
    down = runner.invoke(main, ["datasets", "sync", "--suite", "drive_thru"])
    assert down.exit_code == 2 and "503" in down.output
    assert PLANTED_SECRET not in first.output + second.output + down.output


def test_reused_items_are_items_of_the_runs_experiment_too(env, server):
    """On v4 a run whose items the memo answered still lists every item in its experiment:
    each reused item gets a root observation of this run (its output, no model call,
    ``reused_from`` the run that produced it), and its scores go there. Before, the
    experiment of a rerun served by the memo was empty."""
    from eval_pipeline.integrations.langfuse_experiments import experiment_id

    instance, resources, _ = env
    add_partitions(instance, [EvalPartition("drive_thru", "v1")])
    job = eval_job(resources)
    key = EvalPartition("drive_thru", "v1").key

    def run(cache: str):
        config = {"ops": {"agent_run_outputs": {"config": {"tier": "smoke", "cache": cache}}}}
        result = job.execute_in_process(partition_key=key, run_config=config, instance=instance)
        assert result.success
        return materialized(result, "agent_run_outputs")

    def roots(run_id: str) -> list[dict]:
        server.settle()
        return [o for o in server.state.observations if o.get("name") == "eval-drive_thru"
                and o["experimentId"] == experiment_id(run_id)]  # fmt: skip

    first = run("reuse")
    assert first["reused_from_memo"].value == 0 and len(roots(first["run_id"].value)) == 11
    calls = len([o for o in server.state.observations if o["type"] == "GENERATION"])
    second = run("reuse")
    mine = roots(second["run_id"].value)
    assert second["reused_from_memo"].value == 11 and len(mine) == 11
    assert {o["metadata"]["reused_from"] for o in mine} == {first["run_id"].value}
    assert all(o["output"] for o in mine)  # what the memo answered, shown on the item
    assert len([o for o in server.state.observations if o["type"] == "GENERATION"]) == calls
    sent = [s for s in server.state.scores if "traceId" in s
            and s.get("metadata", {}).get("run_id") == second["run_id"].value]  # fmt: skip
    assert sent and {s["traceId"] for s in sent} <= {o["traceId"] for o in mine}
    assert {s["metadata"]["reused_from"] for s in sent} == {first["run_id"].value}


def test_failures_run_again_are_scored_on_their_production_traces(env, server, monkeypatch):
    """Lineage: each production failure run again says on its own trace whether the
    candidate fixes it."""
    from datetime import date

    from dagster import materialize

    from eval_pipeline.core.traces.observations import parse_observation, score_traces
    from eval_pipeline.core.traces.rerun import failure_cases, write_failures
    from eval_pipeline.defs.evaluation.failure_rerun import build_failure_rerun
    from eval_pipeline.defs.partitions import build_partitions
    from eval_pipeline_tests.helpers import SUITE_NAMES, suite
    from eval_pipeline_tests.integration.test_failure_rerun import BLIND_ADD, CORRECTED

    instance, resources, tmp_path = env
    monkeypatch.setenv("EVAL_HOME", str(tmp_path / "home"))
    records = [parse_observation(o) for o in (BLIND_ADD, CORRECTED)]
    cases = failure_cases(records, score_traces(records, suite("drive_thru").trace_evaluators),
                          date(2026, 11, 21))  # fmt: skip
    write_failures(tmp_path / "home" / "failures" / "drive_thru" / "2026-11-21.yaml", "drive_thru",
                   cases)  # fmt: skip
    add_partitions(instance, [EvalPartition("drive_thru", "v2")])
    rerun = materialize([build_failure_rerun(build_partitions(SUITE_NAMES), "evaluation")],
                           resources=resources, instance=instance,
                           partition_key=EvalPartition("drive_thru", "v2").key)  # fmt: skip
    assert rerun.success
    server.settle()
    lineage = {s["traceId"]: s for s in server.state.scores
               if s.get("name") == "eval_rerun_fixed_v2"}  # fmt: skip
    assert lineage["a" * 32]["value"] == 0.0  # v2 still adds without a lookup
    assert "still fails: tool_protocol" in lineage["a" * 32]["comment"]
    assert lineage["b" * 32]["value"] == 1.0


def test_dataset_item_ids_of_two_suites_never_meet():
    """Before: "<suite>-<case>", so suite "a-b" case "c" and suite "a" case "b-c" were one
    item id, and Langfuse answered the second suite's sync with 409."""
    from eval_pipeline.integrations.langfuse_datasets import item_id

    assert item_id("a-b", "c") != item_id("a", "b-c")


def test_dagster_reads_the_host_from_either_variable(monkeypatch, tmp_path):
    """The SDK and the CLI honour LANGFUSE_HOST (the older name, what US-region guides
    set); Dagster's resource read only LANGFUSE_BASE_URL and went to the EU cloud: 401."""
    from eval_pipeline.defs.resources import default_resources
    from eval_pipeline.integrations.langfuse_client import LangfuseSettings

    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-test")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-test")
    monkeypatch.delenv("LANGFUSE_BASE_URL", raising=False)
    monkeypatch.setenv("LANGFUSE_HOST", "https://us.cloud.langfuse.com")
    settings = resolved(default_resources(PROJECT)["langfuse"]).settings()
    assert settings.base_url == "https://us.cloud.langfuse.com"
    assert settings.base_url == LangfuseSettings.from_env().base_url  # the CLI's
    assert settings.environment == "sdk-experiment"
    monkeypatch.setenv("LANGFUSE_BASE_URL", "https://langfuse.internal")  # first found wins
    assert resolved(default_resources(PROJECT)["langfuse"]).settings().base_url == (
        "https://langfuse.internal")  # fmt: skip


def resolved(resource):
    """The resource as a Dagster run sees it: its EnvVars read."""
    return resource.process_config_and_initialize()


def test_a_bad_environment_name_is_refused_with_what_is_allowed(monkeypatch):
    from eval_pipeline.integrations.langfuse_client import LangfuseSettings

    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-test")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-test")
    monkeypatch.setenv("EVAL_LANGFUSE_ENVIRONMENT", "Langfuse-Eval")
    with pytest.raises(ValueError, match="EVAL_LANGFUSE_ENVIRONMENT='Langfuse-Eval': a "):
        LangfuseSettings.from_env()
    monkeypatch.setenv("EVAL_LANGFUSE_ENVIRONMENT", "ci-evals")
    assert LangfuseSettings.from_env().environment == "ci-evals"


def test_refused_keys_are_said_as_a_configuration_problem(env, server, tmp_path):
    """A 401 was "HTTP 401" in the sensor's skip reason and the write-back error, like an
    outage; it now says which settings to check (the host too: a US-region project's keys
    sent to the EU cloud are refused the same way)."""
    from eval_pipeline.integrations.langfuse_client import LangfuseSettings
    from eval_pipeline.integrations.langfuse_scores import write_back

    instance, resources, _ = env
    server.outage = 401
    skipped, _ = sensor_tick(instance, resources)
    assert "HTTP 401" in skipped.skip_message
    assert "LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY" in skipped.skip_message
    server.outage = None

    wrong = LangfuseSettings(server.public_key, "sk-lf-wrong", server.base_url)
    store = ResultsStore(f"sqlite:///{tmp_path / 'wb.sqlite'}")
    payload = {"id": "s1", "traceId": "t" * 32, "name": "x", "value": 1.0,
               "dataType": "NUMERIC"}  # fmt: skip
    report = write_back(wrong, store, {"s1": payload})
    assert report.queued == 1 and "Langfuse refused the keys" in report.error
    server.outage = 403
    report = write_back(server.settings(), store, {})
    assert report.queued == 1 and "ingestion suspended" in report.error


@pytest.mark.parametrize("version", [V3, V4, V4_DUAL], ids=lambda v: f"langfuse-{v.label}")
def test_every_run_is_a_langfuse_experiment(version, monkeypatch, tmp_path):
    """Every item's spans carry the experiment attributes Langfuse's OTel ingestion reads
    (one experiment per run, one item per case and repeat, rooted at the item's root span,
    the LangGraph spans below counted in it), and the run's means are scores of the
    experiment on a server that groups experiments (v4), of the session on v3. Before, no
    run was linked to anything and the means sat on sessions only."""
    from click.testing import CliRunner

    from eval_pipeline.cli import main
    from eval_pipeline.integrations.langfuse_datasets import item_id
    from eval_pipeline.integrations.langfuse_experiments import experiment_id

    monkeypatch.setenv("EVAL_GIT_COMMIT", "0123abc")  # (as CI names the commit it checks)
    with cli_on(version, monkeypatch, tmp_path) as srv:
        ran = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "smoke"])
        assert ran.exit_code == 0, ran.output
        srv.settle()
        store = ResultsStore(f"sqlite:///{tmp_path / 'home' / 'results.sqlite'}")
        (run,) = store.list_runs(suite="drive_thru")
        # The report says what went to Langfuse and, on v4, where the experiment opens
        said = " ".join(ran.output.split())
        sent = len(srv.state.scores)
        assert f"Langfuse: {sent} score(s) sent to Langfuse" in said
        if version.major >= 4:
            assert (f"/project/{PROJECT_ID}/experiments/results?baseline="
                    f"{experiment_id(run.run_id)}") in said  # fmt: skip
        assert run.code_commit == "0123abc"
        cases = {c.id for c in select_smoke()}
        # the dataset mirrors the whole suite: linking a smoke run archived the other 36
        # cases on v3 and dual (synced with the run's cases; seen on a real dual server)
        active = [i for i in srv.state.dataset_items.values() if i["status"] == "ACTIVE"]
        assert len(active) == len(project_suite("drive_thru").load_cases()) > len(cases)
        linked = [o for o in srv.state.observations if o["experimentId"]]
        assert {o["experimentId"] for o in linked} == {experiment_id(run.run_id)}
        assert {o["experimentName"] for o in linked} == {run.run_id}
        described = json.loads(linked[0]["_attributes"]["langfuse.experiment.metadata"])
        assert described["dataset_version"] == run.dataset_version
        assert described["model"] == run.model and described["prompt_version"] == "v1"
        assert described["commit"] == "0123abc"  # which code the experiment evaluated
        items = [o for o in linked if o["id"] == o["experimentItemRootSpanId"]]
        assert sorted(o["experimentItemId"] for o in items) == sorted(
            item_id("drive_thru", c) for c in cases)  # fmt: skip
        assert any(o["type"] == "GENERATION" for o in linked)  # the graph's calls count too
        # each score with its declared type (BOOLEAN: 0 or 1, which the server checks)
        types = {s["name"]: s["dataType"] for s in srv.state.scores if s.get("traceId")}
        assert types["no_hallucinated_items"] == "BOOLEAN"
        assert types["order_correctness"] == "NUMERIC"
        stored = {s.evaluator: s.data_type for s in store.read_scores(run.run_id)}
        assert stored["no_hallucinated_items"] == "BOOLEAN"
        means = [s for s in srv.state.scores if s["name"].startswith("run_")]
        assert means and not any(s.get("sessionId") for s in means)
        # As a real v4.16.0 server showed (docs/langfuse.md, "Verified against"): a score
        # without an environment lands in "default", out of its traces' views; an item
        # score on the trace alone is hidden in the experiment's default columns; the
        # experiment's description is any of its spans' (the root's alone was often
        # blank); its output column shows the first 1,000 characters.
        assert {s.get("environment") for s in srv.state.scores} == {"sdk-experiment"}
        assert {o["environment"] for o in linked} == {"sdk-experiment"}
        assert {o["_attributes"].get("langfuse.experiment.description") for o in linked} == {
            f"eval-pipeline run {run.run_id} of drive_thru"}  # fmt: skip
        roots = {o["traceId"]: o["id"] for o in items}
        item_scores = [s for s in srv.state.scores if s.get("traceId")]
        for root in items:
            shown = json.loads(root["_attributes"]["langfuse.observation.output"])
            assert next(iter(shown)) == "response"
        if version.major >= 4:  # events: the attributes are the link; nothing else is sent
            assert {s["observationId"] for s in item_scores} == set(roots.values())
            assert all(roots[s["traceId"]] == s["observationId"] for s in item_scores)
            assert {s.get("datasetRunId") for s in means} == {experiment_id(run.run_id)}
            if not version.legacy_reads:
                assert srv.requests[("POST", "/api/public/dataset-run-items")] == 0
            else:  # dual: the v3 dataset run too (its Datasets list and run pages read it;
                # before, the real server's run page said "Dataset run not found")
                (dataset_run,) = srv.state.dataset_runs.values()
                assert dataset_run["name"] == run.run_id
                assert sorted(i["datasetItemId"] for i in srv.state.dataset_run_items) == \
                    sorted(item_id("drive_thru", c) for c in cases)  # fmt: skip
            # the experiment names the synced dataset (listed under it), whose items exist
            dataset = srv.state.datasets["eval-pipeline/drive_thru"]
            assert {o["_attributes"].get("langfuse.experiment.dataset.id")
                    for o in linked} == {dataset["id"]}  # fmt: skip
        else:  # v3 (legacy writes): the dataset synced and a dataset run item per output
            (dataset_run,) = srv.state.dataset_runs.values()
            assert dataset_run["name"] == run.run_id
            assert dataset_run["metadata"]["dataset_version"] == run.dataset_version
            linked_items = srv.state.dataset_run_items
            assert sorted(i["datasetItemId"] for i in linked_items) == sorted(
                item_id("drive_thru", c) for c in cases)  # fmt: skip
            roots = {o["traceId"] for o in items}
            assert {i["traceId"] for i in linked_items} == roots
            assert {s.get("datasetRunId") for s in means} == {dataset_run["id"]}


@pytest.mark.parametrize("version", [V3, V4, V4_DUAL], ids=lambda v: f"langfuse-{v.label}")
def test_the_gates_verdict_is_on_the_experiment_compared_with_its_baselines(
    version, monkeypatch, tmp_path
):
    """A run gated against a baseline: its experiment holds the verdict (CATEGORICAL
    ``verdict``, with ``verdict_delta`` and ``verdict_margin``, the experiments list's
    Experiment score columns), the run-level evaluators' results (``avg_order_correctness``,
    as the SDK's run_experiment sends its run_evaluators'), and on a server that keeps v3's
    dataset runs the run's metadata says the verdict too; the CLI's link compares the
    candidate's experiment with the baseline's (``?baseline=<baseline's>&c=<candidate's>``,
    Langfuse's own comparison links). Before, the verdict was nowhere in Langfuse, the
    run-level evaluator was not sent, and the link opened the candidate alone, said as
    "experiment dataset run <id>"."""
    from click.testing import CliRunner

    from eval_pipeline.cli import main
    from eval_pipeline.integrations.langfuse_experiments import experiment_id

    with cli_on(version, monkeypatch, tmp_path) as srv:
        v2 = local_version(2)
        srv.seed_prompt(PROMPT, v2["prompt"], type=v2["type"], config=v2.get("config"),
                        labels=["staging"])  # fmt: skip
        smoke = ["run", "--suite", "drive_thru", "--tier", "smoke"]
        first = CliRunner().invoke(main, [*smoke, "--json", str(tmp_path / "base.json")],
                                   terminal_width=400)  # fmt: skip
        assert first.exit_code == 0, first.output
        base = json.loads((tmp_path / "base.json").read_text())
        base_id = base["run"]["run_id"]
        ran = CliRunner().invoke(main, [*smoke, "--label", "staging", "--baseline-run", base_id,
                                        "--json", str(tmp_path / "cand.json")],
                                 terminal_width=400)  # fmt: skip
        cand = json.loads((tmp_path / "cand.json").read_text())
        assert ran.exit_code == cand["exit_code"] != 2, ran.output
        srv.settle()
        run_id, conclusion = cand["run"]["run_id"], cand["conclusion"]
        assert conclusion["baseline_run_id"] == base_id and conclusion["metric"]
        said = " ".join(ran.output.split())
        assert "experiment dataset run" not in said
        if version.major >= 4:
            assert (f"experiment {experiment_id(run_id)} (compared with its baseline's: "
                    f"{srv.base_url}/project/{PROJECT_ID}/experiments/results?baseline="
                    f"{experiment_id(base_id)}&c={experiment_id(run_id)})") in said  # fmt: skip
            first_said = " ".join(first.output.split())  # no baseline: the run alone
            assert (f"experiment {experiment_id(base_id)} (opens: {srv.base_url}/project/"
                    f"{PROJECT_ID}/experiments/results?baseline={experiment_id(base_id)})"
                    ) in first_said  # fmt: skip
        dataset_runs = {r["name"]: r for r in srv.state.dataset_runs.values()}
        target = (experiment_id(run_id) if version.major >= 4
                  else dataset_runs[run_id]["id"])  # fmt: skip
        own = {s["name"]: s for s in srv.state.scores if s.get("datasetRunId") == target}
        verdict = own["verdict"]
        assert (verdict["dataType"], verdict["value"]) == ("CATEGORICAL", cand["verdict"])
        margin = project_suite("drive_thru").thresholds.regression.margin
        assert own["verdict_delta"]["value"] == round(conclusion["delta"], 3)
        assert own["verdict_margin"]["value"] == margin
        shown = verdict["metadata"]
        assert shown["verdict"] == cand["verdict"] and shown["baseline_run_id"] == base_id
        assert shown["verdict_metric"] == conclusion["metric"]
        assert verdict["comment"].startswith(f"{cand['verdict']}: {conclusion['reason']} — "
                                             f"{conclusion['metric']} Δ ")  # fmt: skip
        assert f"margin {margin:g}" in verdict["comment"]
        run_level = cand["summary"]["run_evaluations"]["avg_order_correctness"]
        assert own["avg_order_correctness"]["value"] == run_level["value"]
        assert own["avg_order_correctness"]["dataType"] == "NUMERIC"
        assert {s["environment"] for s in own.values()} == {"sdk-experiment"}
        if version.legacy_reads:  # v3, dual: the dataset run, made after the verdict, says it
            metadata = dataset_runs[run_id]["metadata"]
            assert metadata["verdict"] == cand["verdict"]
            assert metadata["verdict_delta"] == shown["verdict_delta"]
            assert dataset_runs[base_id]["metadata"]["verdict"] == "PASS"
        base_target = (experiment_id(base_id) if version.major >= 4
                       else dataset_runs[base_id]["id"])  # fmt: skip
        (base_verdict,) = [s for s in srv.state.scores if s["name"] == "verdict"
                           and s.get("datasetRunId") == base_target]  # fmt: skip
        assert base_verdict["value"] == base["verdict"] == "PASS"  # (no baseline, no gate)
        assert not [s for s in srv.state.scores if s.get("datasetRunId") == base_target
                    and s["name"] in ("verdict_delta", "verdict_margin")]  # fmt: skip


@contextmanager
def cli_on(version, monkeypatch, tmp_path) -> Iterator[LangfuseTestServer]:
    """A test server of ``version`` serving the drive-thru prompt (v1 production), and the
    CLI pointed at it and at the examples' project."""
    from langfuse._client.resource_manager import LangfuseResourceManager

    with LangfuseTestServer(version=version) as srv:
        v1 = local_version(1)
        srv.seed_prompt(PROMPT, v1["prompt"], type=v1["type"], config=v1.get("config"),
                        labels=["production"])  # fmt: skip
        for name, value in srv.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("EVAL_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("EVAL_PROJECT", str(PROJECT))
        LangfuseResourceManager.reset()
        yield srv


def select_smoke():
    from eval_pipeline.core.suites.cases import select_tier

    return select_tier(project_suite("drive_thru").load_cases(), "smoke")


@pytest.mark.parametrize("version", [V3, V4], ids=lambda v: f"langfuse-{v.version}")
def test_the_test_server_refuses_run_items_the_real_one_refuses(version):
    """PostDatasetRunItemsV1Body is strict and needs a trace or an observation; an unknown
    or archived dataset item is 404; v4 (events_only) stores nothing and answers the
    stable experiment id (publicDatasetService.ts)."""
    import httpx

    with LangfuseTestServer(version=version) as srv:
        client = srv.client()
        client.create_dataset(name="d")
        client.create_dataset_item(dataset_name="d", id="i1", input={"q": 1})

        def post(**body):
            return httpx.post(f"{srv.base_url}/api/public/dataset-run-items", json=body,
                              auth=(srv.public_key, srv.secret_key))  # fmt: skip

        assert post(runName="r", datasetItemId="i1").status_code == 400
        assert post(runName="r", datasetItemId="i1", traceId="t", extra=1).status_code == 400
        assert post(runName="r", datasetItemId="nope", traceId="t").status_code == 404
        ok = post(runName="r", datasetItemId="i1", traceId="t")
        assert ok.status_code == 200
        runs = list(srv.state.dataset_runs.values())
        if version.major >= 4:
            assert len(ok.json()["datasetRunId"]) == 16 and runs == []
        else:
            assert ok.json()["datasetRunId"] == runs[0]["id"]


def test_a_run_that_cannot_be_linked_says_so_and_still_passes(monkeypatch, tmp_path):
    """v3 refusing the dataset run: the evaluation is unaffected, the means go on the
    session (Langfuse takes them there), and the run's warnings say why."""
    from click.testing import CliRunner

    from eval_pipeline.cli import main

    with cli_on(V3, monkeypatch, tmp_path) as srv:
        srv.fail_paths = ("/api/public/dataset-run-items",)
        ran = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "smoke"],
                                 terminal_width=400)  # fmt: skip
        assert ran.exit_code == 0, ran.output
        text = " ".join(ran.output.split())
        said = "Langfuse experiment not linked: dataset run of eval-pipeline/drive_thru: HTTP 503"
        assert said in text
        srv.settle()
        means = [s for s in srv.state.scores if s["name"].startswith("run_")]
        assert means and all(s.get("sessionId") and not s.get("datasetRunId") for s in means)


def test_a_rate_limited_write_back_waits_as_asked_then_delivers(server, tmp_path):
    """429 with Retry-After (Langfuse's RateLimitService): waited once, then delivered in
    the same run. Before, every score went to the outbox until the next run."""
    from eval_pipeline.integrations.langfuse_scores import write_back

    store = ResultsStore(f"sqlite:///{tmp_path / 'wb.sqlite'}")
    payload = {"id": "s1", "traceId": "a" * 32, "name": "x", "value": 1.0,
               "dataType": "NUMERIC"}  # fmt: skip
    server.throttled, server.retry_after_s = 1, 1
    report = write_back(server.settings(), store, {"s1": payload})
    assert (report.sent, report.queued, report.error) == (1, 0, None)
    assert server.requests[("POST", "/api/public/ingestion")] == 2

    server.throttled, server.retry_after_s = 1, 3600  # longer than a run should wait
    report = write_back(server.settings(), store, {"s2": {**payload, "id": "s2"}})
    assert report.queued == 1 and "HTTP 429" in report.error and "rate_limited" in report.error


def test_suspended_ingestion_is_said_with_langfuses_own_words(server, tmp_path):
    from eval_pipeline.integrations.langfuse_scores import write_back

    store = ResultsStore(f"sqlite:///{tmp_path / 'wb.sqlite'}")
    server.suspended = True
    payload = {"id": "s1", "traceId": "a" * 32, "name": "x", "value": 1.0,
               "dataType": "NUMERIC"}  # fmt: skip
    report = write_back(server.settings(), store, {"s1": payload})
    assert report.queued == 1
    assert "Ingestion suspended: Usage threshold exceeded" in report.error
    assert "usage limit" in report.error  # and what it means
