"""Against each Langfuse release we support (v3.225.4, v4.16.0 as their defaults make them
answer): the drive-thru smoke path end to end, and score write-back that is capped by
bytes, splits what a proxy refuses and never lets one bad score block the rest."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner
from langfuse._client.resource_manager import LangfuseResourceManager

from eval_pipeline.cli import main
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.integrations.langfuse_scores import (
    BATCH_BYTES,
    OUTBOX_KIND,
    SET_ASIDE_KIND,
    write_back,
)
from eval_pipeline_tests.helpers import EXAMPLES, clean_cli_env, materialized
from eval_pipeline_tests.langfuse_rules import V3, V4, LangfuseVersion
from eval_pipeline_tests.langfuse_server import LangfuseTestServer

PROMPT = "drive-thru/orchestrator"
DAY = "2026-11-20"


@pytest.fixture(params=[V3, V4], ids=lambda v: f"langfuse-{v.version}")
def server(request):
    with LangfuseTestServer(version=request.param) as srv:
        v1 = yaml.safe_load((EXAMPLES / "prompts" / PROMPT / "v1.yaml").read_text())
        srv.seed_prompt(PROMPT, v1["prompt"], type=v1["type"], config=v1.get("config"),
                        labels=["production"])  # fmt: skip
        yield srv


@pytest.fixture
def cli(server, monkeypatch, tmp_path):
    """The CLI configured for ``server`` through the LANGFUSE_* variables."""
    home = clean_cli_env(monkeypatch, tmp_path / "home")
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    LangfuseResourceManager.reset()

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args), terminal_width=200)

    invoke.store = lambda: ResultsStore(f"sqlite:///{home / 'results.sqlite'}")
    return invoke


def test_drive_thru_smoke_path_against_each_supported_release(server, cli, tmp_path):
    """Datasets synced, the smoke run traced and its scores delivered, a day of production
    traces read and scored back onto them."""
    from dagster import MultiPartitionKey, instance_for_test, materialize

    from eval_pipeline.defs.partitions import build_partitions
    from eval_pipeline.defs.resources import LangfuseResource
    from eval_pipeline.defs.traces.assets import build_trace_assets
    from eval_pipeline_tests.helpers import SUITE_NAMES, eval_resources

    synced = cli("datasets", "sync", "--suite", "drive_thru")
    assert synced.exit_code == 0 and "47 created" in synced.output, synced.output
    ran = cli("run", "--suite", "drive_thru", "--tier", "smoke")
    assert ran.exit_code == 0, ran.output
    assert "write-back incomplete" not in ran.output
    store = cli.store()
    (run,) = store.list_runs(suite="drive_thru")
    assert store.queued(OUTBOX_KIND) == {} and store.queued(SET_ASIDE_KIND) == {}
    server.settle()
    on_items = [s for s in server.state.scores if s.get("metadata", {}).get("run_id") == run.run_id
                and "traceId" in s]  # fmt: skip
    assert len(on_items) == len(store.read_scores(run.run_id))
    roots = {o["traceId"] for o in server.state.observations
             if o["name"] == "eval-drive_thru" and o["isRootObservation"]}  # fmt: skip
    assert {s["traceId"] for s in on_items} == roots and len(roots) == 11

    lines = (EXAMPLES / "datasets" / "drive_thru" / "traces" / f"{DAY}.jsonl").read_text()
    server.add_observations(json.loads(line) for line in lines.splitlines())
    langfuse = LangfuseResource(**{k.removeprefix("LANGFUSE_").lower(): v
                                   for k, v in server.env().items()})  # fmt: skip
    production_traces, trace_scores, *_ = build_trace_assets(build_partitions(SUITE_NAMES))
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = materialize(
            [production_traces, trace_scores], instance=instance,
            resources=eval_resources(tmp_path, langfuse=langfuse),
            partition_key=MultiPartitionKey({"day": DAY, "suite": "drive_thru"}),
        )  # fmt: skip
    read = materialized(result, "production_traces")
    assert read["traces_read"].value == 120 and read["source"].value.startswith("langfuse")
    scored = materialized(result, "trace_scores")
    # v1 observations carry no trace cost (costDetails only, empty on a root span): a cost
    # budget cannot be judged there, and is not sent as a pass (it was, as $0.00)
    unknown_cost = 120 if server.version.major == 3 else 0
    assert scored["langfuse_scores_sent"].value == scored["scores"].value - unknown_cost > 0
    assert scored["langfuse_scores_queued"].value == 0


def item_payload(n: int, **extra) -> dict:
    return {"id": f"score-{n:05d}", "traceId": f"{n:032x}", "name": "order_correctness",
            "value": 1.0, "dataType": "NUMERIC", "comment": "c" * 3_000, **extra}  # fmt: skip


def test_batches_are_capped_by_bytes_and_all_delivered(server, tmp_path):
    payloads = {p["id"]: p for p in map(item_payload, range(900))}  # ~2.9 MB of scores
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    report = write_back(server.settings(), store, payloads)
    assert (report.sent, report.queued, report.set_aside) == (900, 0, 0)
    sizes = server.body_sizes["/api/public/ingestion"]
    assert len(sizes) == 3 and max(sizes) <= BATCH_BYTES
    server.settle()
    assert len(server.state.scores) == 900


def test_a_proxy_413_splits_the_batch_and_an_oversized_score_is_set_aside(tmp_path):
    """nginx's client_max_body_size in front of Langfuse: what is too large is split until
    it fits; one score larger than the limit on its own is set aside, never retried."""
    with LangfuseTestServer(proxy_limit_bytes=200_000) as server:
        payloads = {p["id"]: p for p in map(item_payload, range(200))}  # ~640 KB
        payloads["score-huge"] = item_payload(999, id="score-huge",
                                              metadata={"blob": "x" * 300_000})  # fmt: skip
        store = ResultsStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
        report = write_back(server.settings(), store, payloads)
        assert (report.sent, report.queued, report.set_aside) == (200, 0, 1)
        assert "too large" in store.queue_errors(SET_ASIDE_KIND)["score-huge"]
        again = write_back(server.settings(), store, {})
        assert (again.sent, again.retried_from_outbox) == (0, 0)  # set aside: not re-sent


def test_poison_scores_are_set_aside_with_their_reason_and_the_rest_delivered(server, tmp_path):
    """An outbox written by an older version may hold a NaN; the server refuses a score it
    cannot validate (207 names it). Neither blocks the others, now or in the next run."""
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    store.queue(OUTBOX_KIND, {"old-nan": item_payload(1, id="old-nan", value=float("nan"))},
                "HTTP 400")  # fmt: skip
    payloads = {p["id"]: p for p in map(item_payload, range(2, 12))}
    payloads["bad-type"] = item_payload(12, id="bad-type", dataType="numeric")
    report = write_back(server.settings(), store, payloads)
    assert (report.sent, report.queued, report.set_aside) == (10, 0, 2)
    reasons = store.queue_errors(SET_ASIDE_KIND)
    assert "not a finite number" in reasons["old-nan"]
    assert "refused by Langfuse (400)" in reasons["bad-type"]
    assert store.queued(OUTBOX_KIND) == {}
    assert "2 set aside as undeliverable" in report.line()
    server.settle()
    assert len(server.state.scores) == 10


def test_an_outage_queues_and_the_next_write_back_delivers(server, tmp_path):
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    payloads = {p["id"]: p for p in map(item_payload, range(5))}
    server.outage = 503
    down = write_back(server.settings(), store, payloads)
    assert (down.sent, down.queued) == (0, 5) and "503" in down.error
    server.outage = None
    up = write_back(server.settings(), store, {})
    assert (up.sent, up.retried_from_outbox, up.queued) == (5, 5, 0)


def test_scores_refused_for_the_keys_wait_a_bounded_number_of_write_backs(server, tmp_path):
    """Keys Langfuse refuses (401) hold every score back: they wait in the outbox, each
    write-back says why, and once they have waited MAX_ATTEMPTS write-backs they are set
    aside with that reason (kept, never sent again). Before, a 401 queued them forever."""
    from eval_pipeline.integrations.langfuse_client import LangfuseSettings
    from eval_pipeline.integrations.langfuse_scores import MAX_ATTEMPTS

    store = ResultsStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    wrong = LangfuseSettings(server.public_key, "sk-lf-wrong", server.base_url)
    payloads = {p["id"]: p for p in map(item_payload, range(3))}
    first = write_back(wrong, store, payloads)
    assert (first.sent, first.queued) == (0, 3) and "refused the keys" in first.error
    for _ in range(MAX_ATTEMPTS - 2):
        assert write_back(wrong, store, {}).queued == 3
    last = write_back(wrong, store, {})
    assert (last.queued, last.set_aside) == (0, 3)
    assert f"not delivered in {MAX_ATTEMPTS} write-backs" in last.line()
    assert "refused the keys" in last.line()
    assert store.queued(OUTBOX_KIND) == {} and len(store.queued(SET_ASIDE_KIND)) == 3
    assert write_back(server.settings(), store, {}).sent == 0  # set aside: not sent again


def test_an_item_run_again_under_its_run_id_adds_a_root_to_the_same_trace(server, tmp_path):
    """What a re-executed Dagster run does (docs/langfuse.md): both attempts show in one
    trace, and its scores, upserted by id, appear once."""
    from eval_pipeline.core.running.runner import RunnerConfig, run_agent_sync
    from eval_pipeline.core.suites.cases import select_tier
    from eval_pipeline.integrations.langfuse_scores import item_score_payloads
    from eval_pipeline.integrations.services import Services
    from eval_pipeline_tests.helpers import agent, prompt, suite

    services = Services(server.settings(), EXAMPLES / "prompts")
    case = select_tier(suite("drive_thru").load_cases(), "smoke")[:1]
    traced = services.traced(agent("drive_thru", 1), run_id="run-1", suite="drive_thru",
                             prompt=prompt(suite("drive_thru"), 1))  # fmt: skip
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    for _ in range(2):
        (out,) = run_agent_sync(traced, case, RunnerConfig())
        services.flush()
        from eval_pipeline.core.scoring.apply import score_items

        scores = score_items(case, [out], suite("drive_thru").evaluators)
        services.write_back(store, item_score_payloads("run-1", scores, [out]))
    server.settle()
    roots = [o for o in server.state.observations
             if o["name"] == "eval-drive_thru" and o["isRootObservation"]]  # fmt: skip
    assert len(roots) == 2 and len({o["traceId"] for o in roots}) == 1
    assert len(server.state.scores) == len(scores)
    # the agent's generations are linked to the prompt version under test, in the
    # evaluation environment (not production's "default")
    generations = [o for o in server.state.observations if o["type"] == "GENERATION"]
    assert generations and {(o["promptName"], o["promptVersion"]) for o in generations} == {
        ("drive-thru/orchestrator", 1)}  # fmt: skip
    assert {o["environment"] for o in server.state.observations} == {"sdk-experiment"}


@pytest.mark.parametrize(
    ("version", "status", "says"),
    [
        (V3, "ok", "Langfuse 3.225.4"),
        (V4, "ok", "Langfuse 4.16.0"),
        (LangfuseVersion("2.95.1", False, True, ("core",)), "FAIL", "older than v3"),
        (LangfuseVersion("5.0.0", True, False, ("core",)), "ok", "newer than the releases"),
    ],
)
def test_doctor_reports_the_server_version_and_the_outbox(version, status, says, tmp_path,
                                                          monkeypatch):  # fmt: skip
    from eval_pipeline.cli.doctor import check_langfuse

    home = clean_cli_env(monkeypatch, tmp_path / "home")
    with LangfuseTestServer(version=version) as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        store = ResultsStore(f"sqlite:///{home / 'results.sqlite'}")
        store.queue(OUTBOX_KIND, {"a": item_payload(1)}, "HTTP 503")
        store.queue(SET_ASIDE_KIND, {"b": item_payload(2)}, "refused by Langfuse (400): x")
        LangfuseResourceManager.reset()
        doctor = CliRunner().invoke(main, ["doctor"], terminal_width=200)
        finding = check_langfuse()
    line = next(row for row in doctor.output.splitlines() if row.startswith("│ langfuse "))
    assert status in line and (finding.ok == (status == "ok"))
    assert says in finding.detail, finding.detail
    assert "1 score(s) wait in the outbox" in finding.detail
    assert "1 set aside as undeliverable (refused by Langfuse (400): x)" in finding.detail
