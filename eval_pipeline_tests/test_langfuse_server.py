"""The Langfuse test server itself: auth, health, and responses the SDK's models accept."""

from __future__ import annotations

import gzip

import httpx
import pytest
from langfuse.api.commons.errors.unauthorized_error import UnauthorizedError
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.observations.types.observations_v2response import ObservationsV2Response
from langfuse.api.prompts.types.prompt_meta_list_response import PromptMetaListResponse

from eval_pipeline_tests.langfuse_server import LangfuseTestServer


@pytest.fixture
def server():
    with LangfuseTestServer() as srv:
        yield srv


def test_basic_auth_is_required(server):
    assert server.client().auth_check()
    wrong = LangfuseTestServer(server.public_key, "sk-wrong")
    wrong._server.port = server._server.port  # same server, wrong secret
    with pytest.raises(UnauthorizedError):
        wrong.client().api.prompts.list()
    assert httpx.get(f"{server.base_url}/api/public/health").status_code == 401


def test_health_and_listing_validate_against_the_sdk_models(server):
    client = server.client()
    assert client.api.health.health().status == "OK"
    for i in range(5):
        server.seed_prompt(f"p{i}", "text", labels=["production"] if i % 2 else [])
    pages = [client.api.prompts.list(page=p, limit=2) for p in (1, 2, 3)]
    assert [len(p.data) for p in pages] == [2, 2, 1]
    assert pages[0].meta.total_items == 5 and pages[0].meta.total_pages == 3
    labelled = client.api.prompts.list(label="production")
    assert [m.name for m in labelled.data] == ["p1", "p3"]
    raw = httpx.get(
        f"{server.base_url}/api/public/v2/prompts", auth=(server.public_key, server.secret_key)
    ).json()
    parse_obj_as(PromptMetaListResponse, raw)  # how the SDK parses a response


def test_scores_as_object_or_array_upsert_by_id(server):
    auth = (server.public_key, server.secret_key)
    url = f"{server.base_url}/api/public/scores"
    one = httpx.post(
        url, auth=auth, json={"id": "s1", "traceId": "t" * 32, "name": "a", "value": 1.0}
    )
    assert one.status_code == 200 and one.json() == {"id": "s1"}
    many = httpx.post(
        url,
        auth=auth,
        json=[
            {"id": "s1", "traceId": "t" * 32, "name": "a", "value": 0.0},
            {"traceId": "u" * 32, "name": "b", "value": 1.0},
        ],
    )
    assert many.status_code == 202
    assert [s["value"] for s in server.state.scores if s["id"] == "s1"] == [0.0]
    assert len(server.state.scores) == 2


def test_observation_pages_validate_and_never_skip_or_repeat(server):
    server.add_observations(
        {
            "id": f"o{i:05d}",
            "traceId": f"{i:032x}",
            "type": "SPAN",
            "name": "agent",
            "startTime": f"2026-11-20T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
        }
        for i in range(2500)
    )
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
    raw = httpx.get(
        f"{server.base_url}/api/public/v2/observations",
        params={"limit": 10},
        auth=(server.public_key, server.secret_key),
    ).json()
    assert parse_obj_as(ObservationsV2Response, raw).meta.cursor


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
    (obs,) = server.state.observations
    assert obs["traceId"] == "01" * 16 and obs["isRootObservation"] and obs["latency"] == 1.0
