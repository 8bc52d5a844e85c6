"""The Langfuse test server itself: it refuses what the real server (v3.225.4, v4.16.0)
refuses, and its answers validate against the SDK's own models."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest
from langfuse.api.commons.errors.unauthorized_error import UnauthorizedError
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.observations.types.observations_v2response import ObservationsV2Response
from langfuse.api.prompts.types.prompt_meta_list_response import PromptMetaListResponse

from eval_pipeline_tests.langfuse_rules import EVENTS_ONLY_404, V2_OBSERVATIONS_404, V3, V4
from eval_pipeline_tests.langfuse_server import LangfuseTestServer


@pytest.fixture(params=[V3, V4], ids=lambda v: f"langfuse-{v.version}")
def server(request):
    with LangfuseTestServer(version=request.param) as srv:
        yield srv


def call(server: LangfuseTestServer, method: str, path: str, **kwargs) -> httpx.Response:
    auth = (server.public_key, server.secret_key)
    return httpx.request(method, f"{server.base_url}/api/public{path}", auth=auth, **kwargs)


def score(**fields):
    return {"id": "s1", "traceId": "t" * 32, "name": "a", "value": 1.0, "dataType": "NUMERIC",
            **fields}  # fmt: skip


def test_auth_is_required_except_for_health(server):
    assert server.client().auth_check()
    wrong = LangfuseTestServer(server.public_key, "sk-wrong")
    wrong._server.port = server._server.port  # same server, wrong secret
    with pytest.raises(UnauthorizedError):
        wrong.client().api.prompts.list()
    health = httpx.get(f"{server.base_url}/api/public/health")
    assert health.status_code == 200
    assert health.json() == {"status": "OK", "version": server.version.version}
    assert httpx.get(f"{server.base_url}/api/public/v2/prompts").status_code == 401


def test_listing_validates_against_the_sdk_models_and_prompt_creation_is_201(server):
    client = server.client()
    for i in range(5):
        server.seed_prompt(f"p{i}", "text", labels=["production"] if i % 2 else [])
    pages = [client.api.prompts.list(page=p, limit=2) for p in (1, 2, 3)]
    assert [len(p.data) for p in pages] == [2, 2, 1]
    assert pages[0].meta.total_items == 5 and pages[0].meta.total_pages == 3
    labelled = client.api.prompts.list(label="production")
    assert [m.name for m in labelled.data] == ["p1", "p3"]
    parse_obj_as(PromptMetaListResponse, call(server, "GET", "/v2/prompts").json())
    assert call(server, "GET", "/v2/prompts", params={"limit": 101}).status_code == 400
    created = call(server, "POST", "/v2/prompts", json={"name": "new", "prompt": "hi"})
    assert created.status_code == 201 and created.json()["version"] == 1


def test_path_parameters_are_one_segment(server):
    server.seed_prompt("folder/prompt", "hi", labels=["production"])
    call(server, "POST", "/v2/datasets", json={"name": "eval-pipeline/x"})
    for path in ("/v2/datasets/eval-pipeline/x", "/v2/prompts/folder/prompt"):
        unencoded = call(server, "GET", path)
        assert unencoded.status_code == 404 and unencoded.text.startswith("<!DOCTYPE html>")
    assert call(server, "GET", "/v2/datasets/eval-pipeline%2Fx").json()["name"] == "eval-pipeline/x"
    assert call(server, "GET", "/v2/prompts/folder%2Fprompt").json()["name"] == "folder/prompt"
    missing = call(server, "GET", "/v2/datasets/nope")
    assert missing.status_code == 404 and missing.json()["error"] == "LangfuseNotFoundError"


def test_scores_one_object_per_request_and_batches_through_ingestion(server):
    assert call(server, "POST", "/scores", json=score()).json() == {"id": "s1"}
    listed = call(server, "POST", "/scores", json=[score()])
    assert listed.status_code == 400
    assert listed.json()["error"][0]["message"] == "Invalid input: expected object, received array"
    for bad in (score(value=None), score(value="0.5"), score(dataType="numeric"),
                score(sessionId="run-1"), score(name="")):  # fmt: skip
        assert call(server, "POST", "/scores", json=bad).status_code == 400, bad
    nan = call(server, "POST", "/scores", content=json.dumps(score(value=float("nan"))),
               headers={"content-type": "application/json"})  # fmt: skip
    assert (nan.status_code, nan.text) == (400, "Invalid JSON")
    events = [
        {"id": "e1", "type": "score-create", "timestamp": "2026-11-23T10:00:00.000Z",
         "body": score(id="s2")},
        {"id": "e2", "type": "score-create", "timestamp": "2026-11-23T10:00:00.000Z",
         "body": score(id="s3", value="high")},  # NUMERIC with a string: refused
        {"id": "e3", "type": "score-create", "timestamp": "yesterday", "body": score(id="s4")},
    ]  # fmt: skip
    batch = call(server, "POST", "/ingestion", json={"batch": events})
    assert batch.status_code == 207
    assert batch.json()["successes"] == [{"id": "e1", "status": 201}]
    assert {e["id"]: e["status"] for e in batch.json()["errors"]} == {"e2": 400, "e3": 400}
    assert call(server, "POST", "/ingestion", json=events).status_code == 400


def test_writes_become_readable_only_after_ingestion(server):
    server.ingestion_delay_s = 0.3
    call(server, "POST", "/scores", json=score(id="late"))
    assert server.state.scores == []  # accepted, queued
    server.settle()
    assert [s["id"] for s in server.state.scores] == ["late"]
    assert "timestamp" not in server.state.scores[0]  # unknown keys are dropped


def test_bodies_over_the_limit_are_refused_before_anything_else(server):
    big = {"batch": [], "padding": "x" * 1_100_000}
    scores = call(server, "POST", "/scores", json=big)
    assert (scores.status_code, scores.text) == (413, "Body exceeded 1mb limit")
    assert call(server, "POST", "/ingestion", json=big).status_code == 207  # 4.5 MB there
    huge = {"batch": [], "padding": "x" * 4_800_000}
    assert call(server, "POST", "/ingestion", json=huge).text == "Body exceeded 4.5mb limit"


def test_dataset_items_as_the_server_stores_and_lists_them(server):
    call(server, "POST", "/v2/datasets", json={"name": "d"})
    item = {"datasetName": "d", "id": "i1", "input": {"q": "bell\u0007 tab\t"},
            "expectedOutput": "", "metadata": '{"k": 1}'}  # fmt: skip
    stored = call(server, "POST", "/dataset-items", json=item).json()
    assert stored["input"] == {"q": "bell tab\t"} and stored["expectedOutput"] is None
    assert stored["metadata"] == {"k": 1}
    call(server, "POST", "/dataset-items", json={**item, "id": "i2"})
    call(server, "POST", "/dataset-items", json={"datasetName": "d", "id": "i2",
                                                 "status": "ARCHIVED"})  # fmt: skip
    listed = call(server, "GET", "/dataset-items", params={"datasetName": "d"}).json()
    assert [i["id"] for i in listed["data"]] == ["i1"]  # archived items are not listed
    assert server.state.dataset_items["i2"]["input"] == {"q": "bell tab\t"}  # merged, kept
    no_input = call(server, "POST", "/dataset-items", json={"datasetName": "d", "id": "i3"})
    assert no_input.status_code == 400


def observations(n: int, **extra):
    return [{"id": f"o{i:05d}", "traceId": f"{i:032x}", "type": "SPAN", "name": "agent",
             "startTime": f"2026-11-20T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
             **extra} for i in range(n)]  # fmt: skip


def test_each_version_serves_its_own_observations_api(server):
    server.add_observations(observations(250))
    v2 = call(server, "GET", "/v2/observations", params={"limit": 10})
    v1 = call(server, "GET", "/observations", params={"limit": 100})
    if server.version is V4:
        assert v2.status_code == 200 and parse_obj_as(ObservationsV2Response, v2.json()).meta.cursor
        assert (v1.status_code, v1.json()["message"]) == (404, EVENTS_ONLY_404)
        unauthenticated = httpx.get(f"{server.base_url}/api/public/observations")
        assert unauthenticated.status_code == 404  # refused before auth
    else:
        assert (v2.status_code, v2.json()["message"]) == (404, V2_OBSERVATIONS_404)
        assert v1.status_code == 200 and v1.json()["meta"]["totalPages"] == 3
        assert call(server, "GET", "/observations", params={"limit": 101}).status_code == 400


def test_v2_observation_pages_never_skip_or_repeat():
    with LangfuseTestServer(version=V4) as server:
        server.add_observations(observations(2500))
        client = server.client()
        seen, cursor, pages = [], None, 0
        while True:
            page = client.api.observations.get_many(limit=1000, cursor=cursor, name="agent")
            seen += [o.id for o in page.data]
            pages += 1
            cursor = page.meta.cursor
            if not cursor:
                break
    assert pages == 3 and len(seen) == len(set(seen)) == 2500


def test_v2_field_groups_raw_io_and_metadata_cut_at_200_characters():
    long = "y" * 500
    with LangfuseTestServer(version=V4) as server:
        server.add_observations(observations(1, input={"q": 1}, metadata={"note": long}))

        def first(**params):
            return call(server, "GET", "/v2/observations", params=params).json()["data"][0]

        default = first()
        assert "name" in default and "input" not in default and "metadata" not in default
        assert len(first(fields="core,metadata")["metadata"]["note"]) == 200
        assert first(fields="core,metadata", expandMetadata="note")["metadata"]["note"] == long
        full = first(fields="core,io,metadata")
        assert full["metadata"]["note"] == long and full["input"] == '{"q":1}'


def test_otlp_ingestion_accepts_gzip(server):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "root"
    span.start_time_unix_nano, span.end_time_unix_nano = (
        1_763_000_000 * 10**9,
        1_763_000_001 * 10**9,
    )
    response = httpx.post(
        f"{server.base_url}/api/public/otel/v1/traces",
        content=gzip.compress(request.SerializeToString()),
        headers={"content-encoding": "gzip", "content-type": "application/x-protobuf"},
        auth=(server.public_key, server.secret_key),
    )
    assert response.status_code == 200
    server.settle()
    (obs,) = server.state.observations
    assert obs["traceId"] == "01" * 16 and obs["isRootObservation"] and obs["latency"] == 1.0


def test_environments_are_kept_as_public_ingestion_keeps_them(server):
    """PublicEnvironmentName (packages/shared/src/server/ingestion/types.ts): an SDK's
    environment is lowercased and loses every leading "langfuse" (Langfuse's own traffic's
    prefix), scores and spans alike; nothing valid left is "default". So no environment an
    SDK sends is one the Home dashboard leaves out by default (only "langfuse-*", kept for
    Langfuse's own traffic): evaluation traffic stays in sdk-experiment, the SDK's own
    experiments' environment, which the tables' sidebars hide by default."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from eval_pipeline_tests.langfuse_rules import home_dashboard_shows

    twice = "x" if server.version.major >= 4 else "langfuse-x"  # (v3 strips it once)
    kept = {"langfuse-eval": "eval", "LANGFUSE_Eval": "eval", "langfuselangfuse-x": twice,
            "langfuse": "default", "sdk-experiment": "sdk-experiment", "bad env": "default",
            None: "default"}  # fmt: skip
    events = [{"id": f"e{i}", "type": "score-create", "timestamp": "2026-11-23T10:00:00.000Z",
               "body": score(id=f"s{i}", name=str(sent),
                             **({"environment": sent} if sent else {}))}
              for i, sent in enumerate(kept)]  # fmt: skip
    assert call(server, "POST", "/ingestion", json={"batch": events}).status_code == 207
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add()
    for i, sent in enumerate(kept):
        span = spans.spans.add()
        span.trace_id, span.span_id, span.name = bytes([i + 1]) * 16, bytes([i + 1]) * 8, str(sent)
        span.start_time_unix_nano = 1_763_000_000 * 10**9
        if sent:
            attribute = span.attributes.add()
            attribute.key, attribute.value.string_value = "langfuse.environment", sent
    otlp = httpx.post(f"{server.base_url}/api/public/otel/v1/traces",
                      content=request.SerializeToString(),
                      headers={"content-type": "application/x-protobuf"},
                      auth=(server.public_key, server.secret_key))  # fmt: skip
    assert otlp.status_code == 200
    server.settle()
    expected = {str(sent): environment for sent, environment in kept.items()}
    assert {s["name"]: s["environment"] for s in server.state.scores} == expected
    assert {o["name"]: o["environment"] for o in server.state.observations} == expected
    shown = {e for e in expected.values() if home_dashboard_shows(e)}
    assert shown == set(expected.values()) - {"langfuse-x"}  # (v4 closed v3's loophole)
