"""A local server speaking the part of the Langfuse public API that eval-pipeline uses.

No Langfuse server can be installed from PyPI (it needs Postgres, ClickHouse, Redis and
S3), so the tests run the real SDK (and our own HTTP calls) over real HTTP against this
one. It is as strict as the real server on every point we depend on, read from Langfuse's
source at the releases we support (``langfuse_rules.py``; ``version=V3`` or ``V4``):

- path parameters are one segment, matched on the raw path and decoded after; an
  unencoded ``/`` in a name reaches no route and gets Next.js's HTML 404;
- request bodies are parsed before anything else: over the route's limit (1 MB; 4.5 MB
  for ingestion and dataset items) is a plain-text 413, NaN or Infinity a 400;
- ``POST /scores`` takes one score object (an array is a 400), ``POST /ingestion`` a batch
  answered 207 with per-event successes and errors;
- written scores and spans become readable only after ``ingestion_delay_s`` (the server
  queues them); ``settle()`` waits for them;
- dataset items: only ACTIVE ones are listed, control characters are removed from their
  strings, a string holding JSON is stored as that JSON;
- ``GET /v2/observations`` only on v4 (v3: 404 without a preview flag), with field groups,
  IO as raw strings and metadata values cut at 200 characters unless read in full;
  ``GET /observations`` (v1, pages of at most 100) only on v3 (v4: 404 before auth);
- ``/health`` needs no auth and tells the version; prompt creation answers 201, and
  400 for a label outside Langfuse's rule (lowercase, at most 36 characters).

Binds to 127.0.0.1 only; HTTP Basic auth like the real API.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote

from langfuse import Langfuse
from langfuse._client.resource_manager import LangfuseResourceManager
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from eval_pipeline.integrations.langfuse_client import LangfuseSettings
from eval_pipeline_tests.langfuse_rules import (
    EVALUATED_COLUMNS,
    EVENTS_ONLY_404,
    LIMITS,
    V2_OBSERVATIONS_404,
    V4,
    LangfuseVersion,
    config_problem,
    event_error,
    filter_issues,
    filter_matches,
    finite_json,
    normalised_item_field,
    public_environment,
    requested_groups,
    score_config_issues,
    score_issues,
    stored_score,
    v1_row,
    v2_row,
)
from eval_pipeline_tests.model_server import BackgroundServer

PROJECT_ID = "project-eval-pipeline-tests"
ObservationSource = Callable[[int, int], tuple[list[dict[str, Any]], int | None]]
AS_ROOT = "langfuse.internal.as_root"  # the SDK's attribute on a root with a remote parent
NOT_FOUND_PAGE = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>404: This page could not be '
    "found</title></head><body><div><h1>404</h1><h2>This page could not be found.</h2>"
    "</div></body></html>"
)

PROXY_413_PAGE = (
    "<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 "
    "Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>"
)


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class LangfuseState:
    prompts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    dataset_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    dataset_item_events: list[dict[str, Any]] = field(default_factory=list)  # every write
    dataset_runs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    dataset_run_items: list[dict[str, Any]] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)
    dropped_scores: list[tuple[dict[str, Any], str]] = field(default_factory=list)  # and why
    score_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    observations: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)


@dataclass(frozen=True)
class RouteRules:
    """What happens before the handler: Next.js's body parsing (limit, JSON), the v4
    events_only refusal, then authentication."""

    limit: str | None = "1mb"  # None: the route reads its own body (OTLP)
    auth: bool = True
    legacy: bool = False  # refused with 404 on v4 (events_only), before auth


class RawPathRouting:
    """Route on the path as sent (``%2F`` stays inside its segment), as Next.js does;
    handlers decode their path parameters. Uvicorn would hand the decoded path."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("raw_path"):
            scope = {**scope, "path": scope["raw_path"].decode("latin-1")}
        await self.app(scope, receive, send)


class LangfuseTestServer:
    def __init__(
        self,
        public_key: str = "pk-lf-test",
        secret_key: str = "sk-lf-test",
        *,
        version: LangfuseVersion = V4,
        ingestion_delay_s: float = 0.05,
        proxy_limit_bytes: int | None = None,
    ):
        """``proxy_limit_bytes``: a reverse proxy in front with a smaller body limit (nginx
        answers 413 with its own HTML page)."""
        self.public_key = public_key
        self.secret_key = secret_key
        self.version = version
        self.ingestion_delay_s = ingestion_delay_s
        self.proxy_limit_bytes = proxy_limit_bytes
        self.state = LangfuseState()
        self.outage: int | None = None  # every /api/public request answers with this status
        self.fail_paths: Sequence[str] = ()  # ... or only requests to these paths (503)
        self.throttled = 0  # the next N authenticated requests answer 429 (rate_limited)
        self.retry_after_s = 1
        self.suspended = False  # ingestion suspended (usage threshold): 403 on writes
        self.requests: Counter[tuple[str, str]] = Counter()
        self.body_sizes: dict[str, list[int]] = {}  # request body bytes, by path
        self._source: ObservationSource | None = None
        self._queued: list[threading.Timer] = []
        self._server = BackgroundServer(RawPathRouting(self._app()))

    # --- lifecycle ------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    def start(self) -> LangfuseTestServer:
        self._server.start()
        return self

    def stop(self) -> None:
        LangfuseResourceManager.reset()  # the SDK's background exporters point at us
        self.settle()
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

    def settings(self) -> LangfuseSettings:
        """Our settings for this server (what the LANGFUSE_* variables would give)."""
        return LangfuseSettings(self.public_key, self.secret_key, self.base_url)

    def client(self, **kwargs: Any) -> Langfuse:
        """A real SDK client for this server. The SDK shares resources per public key in a
        process, so earlier clients (maybe for another server) are reset first."""
        LangfuseResourceManager.reset()
        return Langfuse(public_key=self.public_key, secret_key=self.secret_key,
                        base_url=self.base_url, **kwargs)  # fmt: skip

    def settle(self, timeout_s: float = 10.0) -> None:
        """Wait until everything accepted so far is readable (the ingestion queue is empty)."""
        deadline = time.monotonic() + timeout_s
        while self._queued and time.monotonic() < deadline:
            self._queued.pop(0).join(max(0.0, deadline - time.monotonic()))

    def _ingest(self, write: Callable[[], None]) -> None:
        """Accepted now, readable after the queue's delay (the worker writes ClickHouse)."""

        def land() -> None:
            with self.state.lock:
                write()

        if self.ingestion_delay_s <= 0:
            land()
            return
        timer = threading.Timer(self.ingestion_delay_s, land)
        timer.daemon = True
        self._queued.append(timer)
        timer.start()

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
        page, limit = _paging(request)
        label, name = request.query_params.get("label"), request.query_params.get("name")
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
        return _page(rows, page, limit)

    async def _get_prompt(self, request: Request) -> Response:
        name = unquote(request.path_params["name"])
        version, label = request.query_params.get("version"), request.query_params.get("label")
        with self.state.lock:
            for entry in self.state.prompts.get(name, []):
                if (version and entry["version"] == int(version)) or (
                    not version and (label or "production") in entry["labels"]
                ):
                    return JSONResponse(self._prompt_json(entry))
        which = f"version {version}" if version else f"label '{label or 'production'}'"
        return _error(404, f"Prompt not found: '{name}' with {which}", "LangfuseNotFoundError")

    async def _create_prompt_route(self, request: Request) -> Response:
        body = request.state.body
        bad = [i for i, x in enumerate(body.get("labels") or []) if not PROMPT_LABEL.match(x)]
        if bad:  # PromptLabelSchema (packages/shared/src/features/prompts/types.ts, v4.16.0)
            return _invalid([{"origin": "string", "code": "invalid_format", "format": "regex",
                              "pattern": "/^[a-z0-9_\\-.]+$/", "path": ["labels", i],
                              "message": "Label must be lowercase alphanumeric with optional "
                              "underscores, hyphens, or periods"} for i in bad])  # fmt: skip
        with self.state.lock:
            version = self._create_prompt(
                body["name"], body["prompt"], body.get("type", "text"), body.get("labels") or [],
                body.get("config") or {}, body.get("tags") or [],
            )  # fmt: skip
            created = self._prompt_json(self.state.prompts[body["name"]][version - 1])
        return JSONResponse(created, status_code=201)

    async def _patch_labels(self, request: Request) -> Response:
        name = unquote(request.path_params["name"])
        version = int(request.path_params["version"])
        labels = list(request.state.body.get("newLabels") or [])
        if "latest" in labels:
            return _invalid([{"code": "custom", "path": ["newLabels"],
                              "message": "Label 'latest' is always assigned to the latest "
                              "prompt version"}])  # fmt: skip
        with self.state.lock:
            if version > len(self.state.prompts.get(name, [])):
                return _error(404, f"Prompt not found: '{name}' with version {version}",
                              "LangfuseNotFoundError")  # fmt: skip
            self._set_labels(name, version, labels)
            return JSONResponse(self._prompt_json(self.state.prompts[name][version - 1]))

    # --- datasets -------------------------------------------------------------------------
    async def _create_dataset(self, request: Request) -> Response:
        body = request.state.body
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
        # decoded twice: once by Next.js, once by the route's zod schema
        name = unquote(unquote(request.path_params["name"]))
        dataset = self.state.datasets.get(name)
        if dataset is None:
            return _error(404, "Dataset not found", "LangfuseNotFoundError")
        return JSONResponse(dataset)

    async def _list_datasets(self, request: Request) -> Response:
        page, limit = _paging(request)
        return _page(list(self.state.datasets.values()), page, limit)

    async def _upsert_item(self, request: Request) -> Response:
        body = request.state.body
        with self.state.lock:
            dataset = self.state.datasets.get(body["datasetName"])
            if dataset is None:
                return _error(404, f"Dataset {body['datasetName']} not found for project "
                              f"{PROJECT_ID}", "LangfuseNotFoundError")  # fmt: skip
            item_id = body.get("id") or uuid.uuid4().hex
            old = self.state.dataset_items.get(item_id)
            if old and old["datasetName"] != dataset["name"]:
                return _error(409, f"Dataset item id {item_id} already exists in another "
                              f"dataset (id {old['datasetId']}) in this project",
                              "LangfuseConflictError")  # fmt: skip
            fields = {}
            for key in ("input", "expectedOutput", "metadata"):
                if key in body:  # absent: an existing item keeps its value
                    fields[key] = normalised_item_field(body[key])
                elif old is None:
                    fields[key] = None
            if old is None and fields["input"] is None:
                return _error(400, "Dataset item validation failed: Dataset item input cannot "
                              "be null", "InvalidRequestError")  # fmt: skip
            item = {
                **(old or {}), **fields,
                "id": item_id, "status": body.get("status") or (old or {}).get("status")
                or "ACTIVE", "sourceTraceId": body.get("sourceTraceId"),
                "sourceObservationId": body.get("sourceObservationId"),
                "datasetId": dataset["id"], "datasetName": dataset["name"],
                "createdAt": old["createdAt"] if old else now_iso(), "updatedAt": now_iso(),
                "mediaReferences": [],
            }  # fmt: skip
            self.state.dataset_items[item_id] = item
            self.state.dataset_item_events.append({**item, "createdAt": item["updatedAt"]})
            return JSONResponse(item)

    async def _list_items(self, request: Request) -> Response:
        page, limit = _paging(request)
        name = request.query_params.get("datasetName")
        version = request.query_params.get("version")
        with self.state.lock:
            if name and name not in self.state.datasets:
                return _error(404, "Dataset not found", "LangfuseNotFoundError")
            items = list(self.state.dataset_items.values())
            if version and self.version.major >= 4:
                items = self._items_at(version)
            rows = [i for i in items if (not name or i["datasetName"] == name)
                    and i["status"] == "ACTIVE"]  # archived items are never listed  # fmt: skip
        return _page(rows, page, limit)

    def _items_at(self, version: str) -> list[dict[str, Any]]:
        """The items as they were at ``version`` (v4's dataset versions: for each item its
        latest write at or before that time, its createdAt that write's; items first
        written later are absent: getDatasetItemsByVersion over dataset_item_events,
        langfuse/langfuse packages/shared/src/server). A v3 server ignores ``version``."""
        at = datetime.fromisoformat(version.replace("Z", "+00:00"))
        latest: dict[str, dict[str, Any]] = {}
        for event in self.state.dataset_item_events:
            written = datetime.fromisoformat(event["createdAt"].replace("Z", "+00:00"))
            if written <= at:
                latest[event["id"]] = event
        return list(latest.values())

    # --- dataset runs -------------------------------------------------------------------
    # web/src/pages/api/public/dataset-run-items.ts, its body PostDatasetRunItemsV1Body
    # (web/src/features/public-api/types/datasets.ts, .strict()), createDatasetRunItemForApi
    # and buildStableDatasetRunItemResponseEventsOnly (web/src/features/datasets/server/
    # publicDatasetService.ts); the run is created on first use by (dataset, name)
    # (packages/shared/src/server/repositories/dataset-runs.ts). On v4 (events_only) the
    # route only looks the item up and answers the stable experiment id: nothing is stored.
    async def _create_run_item(self, request: Request) -> Response:
        body = request.state.body
        issues = run_item_issues(body)
        if issues:
            return _invalid(issues)
        with self.state.lock:
            item = self.state.dataset_items.get(body["datasetItemId"])
            if item is None or item["status"] != "ACTIVE":
                return _error(404, "Dataset item not found", "LangfuseNotFoundError")
            run_id = stable_experiment_id(item["datasetId"], body["runName"])
            if self.version.legacy_reads:
                key = (item["datasetId"], body["runName"])
                run = self.state.dataset_runs.setdefault(key, {
                    "id": uuid.uuid4().hex, "name": body["runName"],
                    "description": body.get("runDescription"), "metadata": body.get("metadata"),
                    "datasetId": item["datasetId"], "datasetName": item["datasetName"],
                    "createdAt": now_iso(), "updatedAt": now_iso()})  # fmt: skip
                run_id = run["id"]
            row = {"id": uuid.uuid4().hex, "datasetRunId": run_id,
                   "datasetRunName": body["runName"], "datasetItemId": item["id"],
                   "traceId": body.get("traceId"), "observationId": body.get("observationId"),
                   "createdAt": now_iso(), "updatedAt": now_iso()}  # fmt: skip
            if self.version.legacy_reads:
                self.state.dataset_run_items.append(row)
        return JSONResponse(row)

    async def _list_runs(self, request: Request) -> Response:
        page, limit = _paging(request)
        name = unquote(unquote(request.path_params["name"]))
        with self.state.lock:
            if name not in self.state.datasets:
                return _error(404, "Dataset not found", "LangfuseNotFoundError")
            rows = [r for r in self.state.dataset_runs.values() if r["datasetName"] == name]
        return _page(sorted(rows, key=lambda r: r["createdAt"], reverse=True), page, limit)

    # --- scores ---------------------------------------------------------------------------
    def _store_scores(self, scores: list[dict[str, Any]]) -> None:
        """Langfuse upserts scores by id (in the queue's worker, later). A score with a
        configId is checked against its config there: one that violates it is dropped,
        after the API answered (langfuse_rules.config_problem), and its name becomes the
        config's."""

        def write() -> None:
            known = {s["id"]: i for i, s in enumerate(self.state.scores)}
            for score in scores:
                if score.get("configId"):
                    config = self.state.score_configs.get(score["configId"])
                    if problem := config_problem(score, config):
                        self.state.dropped_scores.append((score, problem))
                        continue
                    score = {**score, "name": config["name"], "dataType": config["dataType"]}
                if score["id"] in known:
                    self.state.scores[known[score["id"]]] = score
                else:
                    known[score["id"]] = len(self.state.scores)
                    self.state.scores.append(score)

        self._ingest(write)

    async def _scores(self, request: Request) -> Response:
        body = request.state.body
        if problems := score_issues(body):
            return _invalid(problems)
        score = stored_score(body, body.get("id") or str(uuid.uuid4()), self.version)
        self._store_scores([score])
        return JSONResponse({"id": score["id"]})

    async def _create_score_config(self, request: Request) -> Response:
        body = request.state.body
        if problems := score_config_issues(body):
            return _invalid(problems)
        categories = body.get("categories")
        if body["dataType"] == "BOOLEAN":
            categories = [{"label": "True", "value": 1}, {"label": "False", "value": 0}]
        now = now_iso()
        config = {"id": str(uuid.uuid4()), "name": body["name"], "dataType": body["dataType"],
                  "categories": categories, "minValue": body.get("minValue"),
                  "maxValue": body.get("maxValue"), "description": body.get("description"),
                  "isArchived": False, "projectId": PROJECT_ID, "createdAt": now,
                  "updatedAt": now}  # fmt: skip
        with self.state.lock:
            self.state.score_configs[config["id"]] = config
        return JSONResponse(config)

    async def _list_score_configs(self, request: Request) -> Response:
        page, limit = _paging(request)
        with self.state.lock:
            rows = sorted(self.state.score_configs.values(), key=lambda c: c["createdAt"],
                          reverse=True)  # fmt: skip
        return _page(rows, page, limit)

    async def _ingestion(self, request: Request) -> Response:
        body = request.state.body
        if not isinstance(body, dict) or not isinstance(body.get("batch"), list):
            return JSONResponse({"message": "Invalid request data",
                                 "errors": ["Invalid input: expected array"]},
                                status_code=400)  # fmt: skip
        successes, errors, scores = [], [], []
        for event in body["batch"]:
            event_id = event.get("id") if isinstance(event, dict) else None
            event_id = event_id if isinstance(event_id, str) else "unknown"
            kind = event.get("type") if isinstance(event, dict) else None
            if not self.version.legacy_reads and kind not in ("score-create", "sdk-log"):
                errors.append({"id": event_id, "status": 400, "message": "Event type not "
                               "accepted", "error": f"Event type \"{kind}\" is not accepted "
                               "by /api/public/ingestion when LANGFUSE_MIGRATION_V4_WRITE_MODE "
                               "is events_only."})  # fmt: skip
                continue
            problem = event_error(event)
            if problem is None and kind == "score-create":
                issues = score_issues(event.get("body"))
                problem = "; ".join(i["message"] for i in issues) or None
            if problem is not None:
                errors.append({"id": event_id, "status": 400, "message": "Invalid request data",
                               "error": problem})  # fmt: skip
                continue
            if kind == "score-create":
                score_body = event["body"]
                score_id = score_body.get("id") or str(uuid.uuid4())
                scores.append(stored_score(score_body, score_id, self.version))
            successes.append({"id": event_id, "status": 201})
        self._store_scores(scores)
        return JSONResponse({"successes": successes, "errors": errors}, status_code=207)

    # --- traces and observations ----------------------------------------------------------
    async def _otel_traces(self, request: Request) -> Response:
        raw = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        export = ExportTraceServiceRequest()
        export.ParseFromString(raw)
        spans = [
            span
            for resource_spans in export.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        malformed = any(len(s.trace_id) != 16 or len(s.span_id) != 8 for s in spans)
        if self.version.major >= 4 and malformed:
            return JSONResponse({"error": "Invalid OTLP trace export: malformed span or trace id"},
                                status_code=400)  # fmt: skip
        observations = [_observation(span, self.version) for span in spans]
        self._ingest(lambda: self.state.observations.extend(observations))
        return JSONResponse({})

    def _matching(self, q: Any, *, roots_filter: bool) -> list[dict[str, Any]]:
        with self.state.lock:
            rows = [o for o in self.state.observations if _matches(o, q, roots_filter)]
        return sorted(rows, key=lambda o: (o["startTime"], o["id"]))

    def _filtered(self, conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The observations every condition holds for. ``traceName`` is the trace's name:
        set by the SDK (``langfuse.trace.name``) or, as the server does, its root's name."""
        with self.state.lock:
            observations = list(self.state.observations)
        names = {o["traceId"]: o.get("traceName") or o.get("name")
                 for o in observations if is_root(o)}  # fmt: skip
        rows = [{**o, "traceName": o.get("traceName") or names.get(o["traceId"]),
                 "isRootObservation": is_root(o)} for o in observations]  # fmt: skip
        rows = [r for r in rows if all(filter_matches(r, c) for c in conditions)]
        return sorted(rows, key=lambda o: (o["startTime"], o["id"]))

    async def _observations_v2(self, request: Request) -> Response:
        if not self.version.v2_observations:
            return _error(404, V2_OBSERVATIONS_404, "LangfuseNotFoundError")
        q = request.query_params
        limit = int(q.get("limit", 50))
        if not 0 <= limit <= 1000:
            return _invalid([{"code": "too_big", "path": ["limit"],
                              "message": "Too big: expected number to be <=1000"}])  # fmt: skip
        offset = int(base64.b64decode(q["cursor"]).decode()) if q.get("cursor") else 0
        conditions = None
        if q.get("filter"):  # it takes precedence over the query-parameter filters
            conditions, problems = filter_issues(q["filter"])
            if problems:
                return _invalid(problems)
            if gaps := {c["column"] for c in conditions} - set(EVALUATED_COLUMNS):
                return _error(501, f"the test server does not filter on {sorted(gaps)}")
        if self._source is not None:
            page, next_offset = self._source(offset, limit)
        else:
            if conditions is not None:
                rows = self._filtered(conditions)
            else:
                rows = self._matching(q, roots_filter=True)
            page = rows[offset : offset + limit]
            next_offset = offset + limit if offset + limit < len(rows) else None
        groups = requested_groups(q.get("fields"), self.version)
        full_metadata = "io" in groups or bool(q.get("expandMetadata"))
        meta = (
            {"cursor": base64.b64encode(str(next_offset).encode()).decode()} if next_offset else {}
        )
        data = [v2_row(o, groups, full_metadata=full_metadata) for o in page]
        return JSONResponse({"data": data, "meta": meta})

    async def _traces_v1(self, request: Request) -> Response:
        """GET /api/public/traces (v3; GetTracesV1Query in web/src/features/public-api/
        types/traces.ts): filters on the trace's name, its environment(s) and its
        timestamp (from inclusive, to exclusive), newest first, numbered pages. A trace's
        name, environment and timestamp are its root's (the SDK sets the name on the
        root, ``langfuse.trace.name``)."""
        page, limit = _paging(request)
        q = request.query_params
        with self.state.lock:
            roots = [o for o in self.state.observations if is_root(o)]
        traces: dict[str, dict[str, Any]] = {}
        for root in sorted(roots, key=lambda o: o["startTime"]):
            traces.setdefault(root["traceId"], {
                "id": root["traceId"], "name": root.get("traceName") or root.get("name"),
                "timestamp": root["startTime"], "environment": root.get("environment"),
                "projectId": PROJECT_ID,
            })  # fmt: skip
        environments = q.getlist("environment")
        start, end = q.get("fromTimestamp"), q.get("toTimestamp")
        rows = [t for t in traces.values()
                if (not q.get("name") or t["name"] == q["name"])
                and (not environments or t["environment"] in environments)
                and (not start or _ts(t["timestamp"]) >= _ts(start))
                and (not end or _ts(t["timestamp"]) < _ts(end))]  # fmt: skip
        return _page(sorted(rows, key=lambda t: t["timestamp"], reverse=True), page, limit)

    async def _observations_v1(self, request: Request) -> Response:
        page, limit = _paging(request)
        rows = self._matching(request.query_params, roots_filter=False)
        return _page([v1_row(o) for o in rows], page, limit)

    # --- app ------------------------------------------------------------------------------
    def _app(self) -> Starlette:
        def route(path: str, endpoint: Callable, methods: list[str],
                  rules: RouteRules = RouteRules()) -> Route:  # fmt: skip
            async def guarded(request: Request) -> Response:
                self.requests[(request.method, path)] += 1
                if self.outage or request.url.path in self.fail_paths:
                    return _error(self.outage or 503, "service unavailable (test outage)")
                size = len(await request.body())
                self.body_sizes.setdefault(request.url.path, []).append(size)
                limit = self.proxy_limit_bytes
                if limit is not None and size > limit:
                    return HTMLResponse(PROXY_413_PAGE, status_code=413)
                if rules.limit is not None:
                    raw = await request.body()
                    if len(raw) > LIMITS[rules.limit]:
                        return PlainTextResponse(f"Body exceeded {rules.limit} limit", 413)
                    try:
                        request.state.body = finite_json(raw) if raw else {}
                    except ValueError:
                        return PlainTextResponse("Invalid JSON", 400)
                if rules.legacy and not self.version.legacy_reads:
                    return JSONResponse({"message": EVENTS_ONLY_404}, status_code=404)
                if rules.auth and not self._authorised(request):
                    return _error(401, "Invalid credentials. Confirm that you've configured "
                                  "the correct host.")  # fmt: skip
                if rules.auth and self.throttled > 0:
                    self.throttled -= 1
                    return rate_limited(self.retry_after_s)
                if self.suspended and path in SUSPENDABLE:
                    return _error(403, INGESTION_SUSPENDED, "ForbiddenError")
                return await endpoint(request)

            return Route(path, guarded, methods=methods)

        async def health(request: Request) -> Response:
            return JSONResponse({"status": "OK", "version": self.version.version})

        async def projects(request: Request) -> Response:
            return JSONResponse({"data": [{"id": PROJECT_ID, "name": "eval-pipeline tests",
                                           "metadata": {}, "organization": {
                                               "id": "org-tests", "name": "tests"}}]})  # fmt: skip

        base = "/api/public"
        public, legacy = RouteRules(auth=False), RouteRules(legacy=True)
        large, own_body = RouteRules(limit="4.5mb"), RouteRules(limit=None)
        routes = [
            route(f"{base}/health", health, ["GET"], public),
            route(f"{base}/projects", projects, ["GET"]),
            route(f"{base}/v2/prompts", self._list_prompts, ["GET"]),
            route(f"{base}/v2/prompts", self._create_prompt_route, ["POST"]),
            route(
                f"{base}/v2/prompts/{{name}}/versions/{{version:int}}",
                self._patch_labels,
                ["PATCH"],
            ),
            route(f"{base}/v2/prompts/{{name}}", self._get_prompt, ["GET"]),
            route(f"{base}/v2/datasets", self._create_dataset, ["POST"]),
            route(f"{base}/v2/datasets", self._list_datasets, ["GET"]),
            route(f"{base}/v2/datasets/{{name}}", self._get_dataset, ["GET"]),
            route(f"{base}/dataset-items", self._upsert_item, ["POST"], large),
            route(f"{base}/dataset-items", self._list_items, ["GET"]),
            route(f"{base}/dataset-run-items", self._create_run_item, ["POST"]),
            route(
                f"{base}/datasets/{{name}}/runs", self._list_runs, ["GET"], RouteRules(legacy=True)
            ),
            route(f"{base}/scores", self._scores, ["POST"]),
            route(f"{base}/score-configs", self._create_score_config, ["POST"]),
            route(f"{base}/score-configs", self._list_score_configs, ["GET"]),
            route(f"{base}/ingestion", self._ingestion, ["POST"], large),
            route(f"{base}/otel/v1/traces", self._otel_traces, ["POST"], own_body),
            route(f"{base}/v2/observations", self._observations_v2, ["GET"]),
            route(f"{base}/observations", self._observations_v1, ["GET"], legacy),
            route(f"{base}/traces", self._traces_v1, ["GET"], legacy),
        ]

        async def refused(request: Request, exc: HTTPException) -> Response:
            if exc.status_code == 404:  # no route: Next.js's page, not Langfuse's JSON
                return HTMLResponse(NOT_FOUND_PAGE, status_code=404)
            if exc.status_code == 405:
                return _error(405, "Method not allowed", "MethodNotAllowedError")
            return _invalid([{"code": "custom", "path": [], "message": exc.detail}])

        return Starlette(routes=routes, exception_handlers={HTTPException: refused})

    def _authorised(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return (user, password) == (self.public_key, self.secret_key)


# web/src/features/public-api/server/RateLimitService.ts: after authentication, per
# project; the body is unstable-public-api-error-contract.ts's.
def rate_limited(retry_after_s: int) -> JSONResponse:
    reset = datetime.now(UTC) + timedelta(seconds=retry_after_s)
    body = {"message": "Rate limit exceeded", "code": "rate_limited",
            "details": {"retryAfterSeconds": retry_after_s, "limit": 1000, "remaining": 0,
                        "resetAt": reset.isoformat()}}  # fmt: skip
    headers = {"Retry-After": str(retry_after_s), "X-RateLimit-Limit": "1000",
               "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset.ctime()}  # fmt: skip
    return JSONResponse(body, status_code=429, headers=headers)


# pages/api/public/ingestion.ts, otel/v1/traces/index.ts, scores/index.ts: a project over
# its usage threshold (Langfuse Cloud) has its writes refused with this message
INGESTION_SUSPENDED = "Ingestion suspended: Usage threshold exceeded. Please upgrade your plan."
SUSPENDABLE = ("/api/public/ingestion", "/api/public/otel/v1/traces", "/api/public/scores")


RUN_ITEM_KEYS = {
    "runName",
    "runDescription",
    "metadata",
    "datasetItemId",
    "observationId",
    "traceId",
    "datasetVersion",
    "createdAt",
}


def run_item_issues(body: Any) -> list[dict[str, Any]]:
    """PostDatasetRunItemsV1Body: runName and datasetItemId required, no other keys than
    RUN_ITEM_KEYS, and a traceId or an observationId."""
    if not isinstance(body, dict):
        return [{"code": "invalid_type", "path": [], "message": "Expected object"}]
    found = [
        {"code": "invalid_type", "path": [k], "message": "Required"}
        for k in ("runName", "datasetItemId")
        if not isinstance(body.get(k), str)
    ]
    if extra := sorted(set(body) - RUN_ITEM_KEYS):
        found.append({"code": "unrecognized_keys", "keys": extra, "path": [],
                      "message": f"Unrecognized key(s) in object: {extra}"})  # fmt: skip
    if not (body.get("traceId") or body.get("observationId")):
        found.append({"code": "custom", "path": [],
                      "message": "ObservationId or traceId must be provided"})  # fmt: skip
    return found


def stable_experiment_id(dataset_id: str, run_name: str) -> str:
    """createStableExperimentId (publicDatasetService.ts), as the SDK's
    _create_experiment_id: JSON.stringify of the array, SHA-256, 16 hex characters."""
    payload = json.dumps(["langfuse-experiment-v1", PROJECT_ID, dataset_id, run_name],
                         separators=(",", ":"), ensure_ascii=False)  # fmt: skip
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _error(status: int, message: str, error: str | None = None) -> JSONResponse:
    body = {"message": message, **({"error": error} if error else {})}
    return JSONResponse(body, status_code=status)


# packages/shared/src/features/prompts/constants.ts: PROMPT_LABEL_REGEX, at most 36
PROMPT_LABEL = re.compile(r"^[a-z0-9_\-.]{1,36}$")


def _invalid(issues: list[dict[str, Any]]) -> JSONResponse:
    return JSONResponse({"message": "Invalid request data", "error": issues}, status_code=400)


def _paging(request: Request) -> tuple[int, int]:
    """page >= 1 and 1 <= limit <= 100, as the API's pagination schema."""
    q = request.query_params
    page, limit = int(q.get("page", 1)), int(q.get("limit", 50))
    if page < 1 or not 1 <= limit <= 100:
        raise HTTPException(400, f"page {page} / limit {limit}: limit must be 1..100")
    return page, limit


def _page(rows: list[dict[str, Any]], page: int, limit: int) -> JSONResponse:
    start = (page - 1) * limit
    meta = {"page": page, "limit": limit, "totalItems": len(rows),
            "totalPages": (len(rows) + limit - 1) // limit}  # fmt: skip
    return JSONResponse({"data": rows[start : start + limit], "meta": meta})


def _matches(observation: dict[str, Any], q: Any, roots_filter: bool) -> bool:
    checks = {"name": "name", "traceId": "traceId", "type": "type", "sessionId": "sessionId",
              "environment": "environment"}  # fmt: skip
    for param, key in checks.items():
        if q.get(param) and observation.get(key) != q[param]:
            return False
    if roots_filter and q.get("isRootObservation") == "true" and not is_root(observation):
        return False
    start = observation["startTime"]
    if q.get("fromStartTime") and _ts(start) < _ts(q["fromStartTime"]):
        return False
    return not (q.get("toStartTime") and _ts(start) >= _ts(q["toStartTime"]))


def is_root(observation: dict[str, Any]) -> bool:
    """v4's rule: no parent, or the SDK marked it a root (a span started under a remote
    parent, e.g. with ``trace_context``, keeps that parent's id)."""
    return observation.get("isRootObservation", not observation.get("parentObservationId"))


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


def _observation(span: Any, version: LangfuseVersion = V4) -> dict[str, Any]:
    """One OTLP span as stored: every field the read APIs select from (rules.v2_row,
    rules.v1_row)."""
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
        "parentObservationId": parent,  # kept when the span started under a remote parent
        "isRootObservation": parent is None or str(attrs.get(AS_ROOT)).lower() == "true",
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
        # the SDK sets it on every span (langfuse/_client/span.py); the server's default
        # when absent, and the reserved "langfuse" prefix stripped (langfuse_rules.py)
        "environment": public_environment(attrs.get("langfuse.environment"), version),
        # the experiment an item belongs to (OtelIngestionProcessor.extractExperimentFields)
        "experimentId": attrs.get("langfuse.experiment.id"),
        "experimentName": attrs.get("langfuse.experiment.name"),
        "experimentItemId": attrs.get("langfuse.experiment.item.id"),
        "experimentItemRootSpanId": attrs.get("langfuse.experiment.item.root_observation_id"),
        "promptName": attrs.get("langfuse.observation.prompt.name"),
        "promptVersion": attrs.get("langfuse.observation.prompt.version"),
        "traceName": attrs.get("langfuse.trace.name"),
        "tags": list(tags) if isinstance(tags, list) else ([tags] if tags else []),
        "providedModelName": attrs.get("langfuse.observation.model.name"),
        "usageDetails": _maybe_json(attrs.get("langfuse.observation.usage_details")),
        "costDetails": _maybe_json(attrs.get("langfuse.observation.cost_details")),
        "latency": latency,
        "_attributes": attrs,
    }
