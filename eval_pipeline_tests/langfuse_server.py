"""A local server speaking the part of the Langfuse public API that langfuse SDK 5 uses here.

No Langfuse server can be installed from PyPI (it needs Postgres, ClickHouse, Redis and
S3), so the tests run the real SDK over real HTTP against this one. Responses are built
in the API's JSON shape and the SDK parses them with its own pydantic models, so a field
we get wrong fails the tests. Binds to 127.0.0.1 only; HTTP Basic auth like the real API.

Routes: projects, health, v2 prompts (list / get / create / patch labels), v2 datasets,
dataset-items, scores (array or object), OTLP/HTTP trace ingestion (protobuf, optionally
gzip) turned into observations, and v2 observations with cursor paging.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from langfuse import Langfuse
from langfuse._client.resource_manager import LangfuseResourceManager
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from eval_pipeline_tests.model_server import BackgroundServer

PROJECT_ID = "project-eval-pipeline-tests"
ObservationSource = Callable[[int, int], tuple[list[dict[str, Any]], int | None]]


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class LangfuseState:
    prompts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    dataset_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)


class LangfuseTestServer:
    def __init__(self, public_key: str = "pk-lf-test", secret_key: str = "sk-lf-test"):
        self.public_key = public_key
        self.secret_key = secret_key
        self.state = LangfuseState()
        self.outage: int | None = None  # every /api/public request answers with this status
        self.fail_paths: Sequence[str] = ()  # ... or only requests to these paths (503)
        self.requests: Counter[tuple[str, str]] = Counter()
        self._source: ObservationSource | None = None
        self._server = BackgroundServer(self._app())

    # --- lifecycle ------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    def start(self) -> LangfuseTestServer:
        self._server.start()
        return self

    def stop(self) -> None:
        LangfuseResourceManager.reset()  # the SDK's background exporters point at us
        self._server.stop()

    def __enter__(self) -> LangfuseTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        return {
            "LANGFUSE_PUBLIC_KEY": self.public_key,
            "LANGFUSE_SECRET_KEY": self.secret_key,
            "LANGFUSE_BASE_URL": self.base_url,
        }

    def client(self, **kwargs: Any) -> Langfuse:
        """A real SDK client for this server. The SDK shares resources per public key in a
        process, so earlier clients (maybe for another server) are reset first."""
        LangfuseResourceManager.reset()
        return Langfuse(public_key=self.public_key, secret_key=self.secret_key,
                        base_url=self.base_url, **kwargs)  # fmt: skip

    # --- seeding without HTTP -------------------------------------------------------------
    def seed_prompt(
        self,
        name: str,
        prompt: str | list[dict[str, Any]],
        *,
        type: str = "text",
        labels: Sequence[str] = (),
        config: dict[str, Any] | None = None,
    ) -> int:
        with self.state.lock:
            return self._create_prompt(name, prompt, type, list(labels), config or {}, [])

    def move_label(self, name: str, version: int, label: str) -> None:
        with self.state.lock:
            self._set_labels(name, version, [label])

    def add_observations(self, observations: Iterable[dict[str, Any]]) -> None:
        with self.state.lock:
            self.state.observations.extend({"projectId": PROJECT_ID, **o} for o in observations)

    def set_observation_source(self, source: ObservationSource | None) -> None:
        """Serve GET v2/observations from ``source(offset, limit) -> (page, next offset)``:
        huge synthetic days without holding them in memory (filters are not applied)."""
        self._source = source

    # --- prompts --------------------------------------------------------------------------
    def _create_prompt(self, name, prompt, kind, labels, config, tags) -> int:
        versions = self.state.prompts.setdefault(name, [])
        version = len(versions) + 1
        versions.append({
            "type": kind, "name": name, "version": version, "prompt": prompt,
            "config": config, "labels": [], "tags": tags, "commitMessage": None,
            "updatedAt": now_iso(),
        })  # fmt: skip
        self._set_labels(name, version, ["latest", *labels])
        return version

    def _set_labels(self, name: str, version: int, labels: list[str]) -> None:
        for entry in self.state.prompts[name]:
            if entry["version"] != version:
                entry["labels"] = [x for x in entry["labels"] if x not in labels]
        target = self.state.prompts[name][version - 1]
        target["labels"] = sorted(set(target["labels"]) | set(labels))
        target["updatedAt"] = now_iso()

    @staticmethod
    def _prompt_json(entry: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in entry.items() if k != "updatedAt"}

    async def _list_prompts(self, request: Request) -> Response:
        q = request.query_params
        page, limit = int(q.get("page", 1)), int(q.get("limit", 50))
        label, name = q.get("label"), q.get("name")
        rows = []
        with self.state.lock:
            for prompt_name in sorted(self.state.prompts):
                if name and prompt_name != name:
                    continue
                matching = [e for e in self.state.prompts[prompt_name]
                            if not label or label in e["labels"]]  # fmt: skip
                if not matching:
                    continue
                latest = max(matching, key=lambda e: e["version"])
                rows.append({
                    "name": prompt_name, "type": latest["type"],
                    "versions": [e["version"] for e in matching],
                    "labels": sorted({x for e in matching for x in e["labels"]}),
                    "tags": latest["tags"], "lastUpdatedAt": latest["updatedAt"],
                    "lastConfig": latest["config"],
                })  # fmt: skip
        start = (page - 1) * limit
        return JSONResponse(
            {"data": rows[start : start + limit], "meta": _page_meta(page, limit, len(rows))}
        )

    async def _get_prompt(self, request: Request) -> Response:
        name = unquote(request.path_params["name"])
        version, label = request.query_params.get("version"), request.query_params.get("label")
        with self.state.lock:
            for entry in self.state.prompts.get(name, []):
                if (version and entry["version"] == int(version)) or (
                    not version and (label or "production") in entry["labels"]
                ):
                    return JSONResponse(self._prompt_json(entry))
        return _error(404, f"Prompt not found: {name}")

    async def _create_prompt_route(self, request: Request) -> Response:
        body = await request.json()
        with self.state.lock:
            version = self._create_prompt(
                body["name"], body["prompt"], body.get("type", "text"), body.get("labels") or [],
                body.get("config") or {}, body.get("tags") or [],
            )  # fmt: skip
            return JSONResponse(self._prompt_json(self.state.prompts[body["name"]][version - 1]))

    async def _patch_labels(self, request: Request) -> Response:
        name = unquote(request.path_params["name"])
        version = int(request.path_params["version"])
        body = await request.json()
        with self.state.lock:
            if version > len(self.state.prompts.get(name, [])):
                return _error(404, f"Prompt version not found: {name} v{version}")
            self._set_labels(name, version, list(body.get("newLabels") or []))
            return JSONResponse(self._prompt_json(self.state.prompts[name][version - 1]))

    # --- datasets -------------------------------------------------------------------------
    async def _create_dataset(self, request: Request) -> Response:
        body = await request.json()
        with self.state.lock:
            dataset = self.state.datasets.get(body["name"]) or {
                "id": uuid.uuid4().hex, "name": body["name"], "projectId": PROJECT_ID,
                "createdAt": now_iso(),
            }  # fmt: skip
            dataset |= {"description": body.get("description"), "metadata": body.get("metadata"),
                        "inputSchema": body.get("inputSchema"), "updatedAt": now_iso(),
                        "expectedOutputSchema": body.get("expectedOutputSchema")}  # fmt: skip
            self.state.datasets[body["name"]] = dataset
            return JSONResponse(dataset)

    async def _get_dataset(self, request: Request) -> Response:
        name = unquote(request.path_params["name"])
        dataset = self.state.datasets.get(name)
        return JSONResponse(dataset) if dataset else _error(404, f"Dataset not found: {name}")

    async def _list_datasets(self, request: Request) -> Response:
        rows = list(self.state.datasets.values())
        return JSONResponse({"data": rows, "meta": _page_meta(1, max(len(rows), 1), len(rows))})

    async def _upsert_item(self, request: Request) -> Response:
        body = await request.json()
        with self.state.lock:
            dataset = self.state.datasets.get(body["datasetName"])
            if dataset is None:
                return _error(404, f"Dataset not found: {body['datasetName']}")
            item_id = body.get("id") or uuid.uuid4().hex
            old = self.state.dataset_items.get(item_id)
            if old and old["datasetName"] != dataset["name"]:
                return _error(409, f"Dataset item {item_id} belongs to another dataset")
            item = {
                "id": item_id, "status": body.get("status") or "ACTIVE",
                "input": body.get("input"), "expectedOutput": body.get("expectedOutput"),
                "metadata": body.get("metadata"), "sourceTraceId": body.get("sourceTraceId"),
                "sourceObservationId": body.get("sourceObservationId"),
                "datasetId": dataset["id"], "datasetName": dataset["name"],
                "createdAt": old["createdAt"] if old else now_iso(), "updatedAt": now_iso(),
                "mediaReferences": [],
            }  # fmt: skip
            self.state.dataset_items[item_id] = item
            return JSONResponse(item)

    async def _list_items(self, request: Request) -> Response:
        q = request.query_params
        page, limit = int(q.get("page", 1)), int(q.get("limit", 50))
        name = q.get("datasetName")
        with self.state.lock:
            rows = [i for i in self.state.dataset_items.values()
                    if not name or i["datasetName"] == name]  # fmt: skip
        start = (page - 1) * limit
        return JSONResponse(
            {"data": rows[start : start + limit], "meta": _page_meta(page, limit, len(rows))}
        )

    # --- scores, traces, observations -----------------------------------------------------
    async def _scores(self, request: Request) -> Response:
        body = await request.json()
        scores = [{**s, "id": s.get("id") or uuid.uuid4().hex}
                  for s in (body if isinstance(body, list) else [body])]  # fmt: skip
        with self.state.lock:
            known = {s["id"]: i for i, s in enumerate(self.state.scores)}
            for score in scores:
                if score["id"] in known:  # Langfuse upserts scores by id
                    self.state.scores[known[score["id"]]] = score
                else:
                    known[score["id"]] = len(self.state.scores)
                    self.state.scores.append(score)
        if isinstance(body, list):
            return JSONResponse({"message": "Accepted"}, status_code=202)
        return JSONResponse({"id": scores[0]["id"]})

    async def _otel_traces(self, request: Request) -> Response:
        raw = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        export = ExportTraceServiceRequest()
        export.ParseFromString(raw)
        observations = [
            _observation(span)
            for resource_spans in export.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        self.add_observations(observations)
        return Response(b"", media_type="application/x-protobuf")

    async def _observations(self, request: Request) -> Response:
        q = request.query_params
        limit = min(int(q.get("limit", 50)), 1000)
        offset = int(base64.b64decode(q["cursor"]).decode()) if q.get("cursor") else 0
        if self._source is not None:
            page, next_offset = self._source(offset, limit)
        else:
            with self.state.lock:
                rows = sorted((o for o in self.state.observations if _matches(o, q)),
                              key=lambda o: (o["startTime"], o["id"]))  # fmt: skip
            page = rows[offset : offset + limit]
            next_offset = offset + limit if offset + limit < len(rows) else None
        meta = (
            {"cursor": base64.b64encode(str(next_offset).encode()).decode()} if next_offset else {}
        )
        public = [{k: v for k, v in o.items() if not k.startswith("_")} for o in page]
        return JSONResponse({"data": public, "meta": meta})

    # --- app ------------------------------------------------------------------------------
    def _app(self) -> Starlette:
        def route(path: str, endpoint: Callable, methods: list[str]) -> Route:
            async def guarded(request: Request) -> Response:
                self.requests[(request.method, path)] += 1
                if self.outage or request.url.path in self.fail_paths:
                    return _error(self.outage or 503, "service unavailable (test outage)")
                if not self._authorised(request):
                    return _error(401, "Invalid credentials")
                return await endpoint(request)

            return Route(path, guarded, methods=methods)

        base = "/api/public"
        routes = [
            route(f"{base}/health", lambda r: _json({"version": "3.0.0", "status": "OK"}), ["GET"]),
            route(
                f"{base}/projects",
                lambda r: _json(
                    {
                        "data": [
                            {
                                "id": PROJECT_ID,
                                "name": "eval-pipeline tests",
                                "metadata": {},
                                "organization": {"id": "org-tests", "name": "tests"},
                            }
                        ]
                    }
                ),
                ["GET"],
            ),
            route(f"{base}/v2/prompts", self._list_prompts, ["GET"]),
            route(f"{base}/v2/prompts", self._create_prompt_route, ["POST"]),
            route(
                f"{base}/v2/prompts/{{name:path}}/versions/{{version:int}}",
                self._patch_labels,
                ["PATCH"],
            ),
            route(f"{base}/v2/prompts/{{name:path}}", self._get_prompt, ["GET"]),
            route(f"{base}/v2/datasets", self._create_dataset, ["POST"]),
            route(f"{base}/v2/datasets", self._list_datasets, ["GET"]),
            route(f"{base}/v2/datasets/{{name:path}}", self._get_dataset, ["GET"]),
            route(f"{base}/dataset-items", self._upsert_item, ["POST"]),
            route(f"{base}/dataset-items", self._list_items, ["GET"]),
            route(f"{base}/scores", self._scores, ["POST"]),
            route(f"{base}/otel/v1/traces", self._otel_traces, ["POST"]),
            route(f"{base}/v2/observations", self._observations, ["GET"]),
        ]
        return Starlette(routes=routes)

    def _authorised(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return (user, password) == (self.public_key, self.secret_key)


async def _json(value: Any) -> Response:
    return JSONResponse(value)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message, "error": message}, status_code=status)


def _page_meta(page: int, limit: int, total: int) -> dict[str, int]:
    return {"page": page, "limit": limit, "totalItems": total,
            "totalPages": (total + limit - 1) // limit}  # fmt: skip


def _matches(observation: dict[str, Any], q: Any) -> bool:
    checks = {"name": "name", "traceId": "traceId", "type": "type", "sessionId": "sessionId"}
    for param, key in checks.items():
        if q.get(param) and observation.get(key) != q[param]:
            return False
    if q.get("isRootObservation") == "true" and observation.get("parentObservationId"):
        return False
    start = observation["startTime"]
    if q.get("fromStartTime") and _ts(start) < _ts(q["fromStartTime"]):
        return False
    return not (q.get("toStartTime") and _ts(start) >= _ts(q["toStartTime"]))


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _observation(span: Any) -> dict[str, Any]:
    """One OTLP span in the shape GET /api/public/v2/observations returns."""
    attrs = {kv.key: _value(kv.value) for kv in span.attributes}

    def prefixed(prefix: str) -> dict[str, Any]:
        return {k[len(prefix) :]: _maybe_json(v) for k, v in attrs.items() if k.startswith(prefix)}

    def iso(nanos: int) -> str | None:
        if not nanos:
            return None
        return datetime.fromtimestamp(nanos / 1e9, UTC).isoformat().replace("+00:00", "Z")

    parent = span.parent_span_id.hex() or None
    metadata = prefixed("langfuse.trace.metadata.") | prefixed("langfuse.observation.metadata.")
    tags = attrs.get("langfuse.trace.tags")
    latency = (
        (span.end_time_unix_nano - span.start_time_unix_nano) / 1e9
        if span.end_time_unix_nano
        else None
    )
    return {
        "id": span.span_id.hex(),
        "traceId": span.trace_id.hex(),
        "parentObservationId": parent,
        "isRootObservation": parent is None,
        "projectId": PROJECT_ID,
        "type": str(attrs.get("langfuse.observation.type", "span")).upper(),
        "name": span.name,
        "startTime": iso(span.start_time_unix_nano),
        "endTime": iso(span.end_time_unix_nano),
        "level": str(attrs.get("langfuse.observation.level", "DEFAULT")).upper(),
        "statusMessage": attrs.get("langfuse.observation.status_message"),
        "input": attrs.get("langfuse.observation.input"),
        "output": attrs.get("langfuse.observation.output"),
        "metadata": metadata or None,
        "sessionId": attrs.get("session.id"),
        "userId": attrs.get("user.id"),
        "traceName": attrs.get("langfuse.trace.name"),
        "tags": list(tags) if isinstance(tags, list) else ([tags] if tags else []),
        "model": attrs.get("langfuse.observation.model.name"),
        "usageDetails": _maybe_json(attrs.get("langfuse.observation.usage_details")),
        "costDetails": _maybe_json(attrs.get("langfuse.observation.cost_details")),
        "latency": latency,
        "_attributes": attrs,
    }
