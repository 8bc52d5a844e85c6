"""Where production traces come from: Langfuse or local JSONL files.

Both yield the root observations of one suite's agent for one UTC day, parsed into
``TraceRecord``s one at a time (streaming: memory does not grow with the day's volume).

Langfuse v4 serves the v2 observations API (cursor pages of 1,000); self-hosted v3 answers
it 404 unless a preview flag is set, and serves the v1 API instead (numbered pages of at
most 100, no root filter, no trace tags). We ask v2 first and fall back to v1 on its 404.

A root is an observation without a parent, or one the SDK started under a remote parent
(``trace_context``: distributed tracing), which keeps that parent's id. v4 tells them
apart (``isRootObservation``); from v1 we take, besides those without a parent, those
whose parent is not an observation of the same name (a second pass, only when needed).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any, Protocol

import httpx
from langfuse.api.core.api_error import ApiError

from eval_pipeline.core.suite import Suite
from eval_pipeline.core.traces.records import (
    TraceError,
    TraceRecord,
    day_window,
    parse_observation,
    read_trace_file,
)
from eval_pipeline.integrations.langfuse_client import LangfuseService, describe_error

# Field groups of GET /api/public/v2/observations that the parser needs, nothing more.
# With "io" among them metadata comes untruncated (else each value is cut at 200 chars).
FIELDS = "core,basic,io,metadata,usage,metrics,trace_context"
PAGE_SIZE = 1000
V1_PAGE_SIZE = 100  # the v1 API's maximum


class TraceSourceError(RuntimeError):
    """The trace source could not be read (unreachable, refused, or bad data)."""


class TraceSource(Protocol):
    @property
    def description(self) -> str: ...

    def traces(self, suite: Suite, day: date) -> Iterator[TraceRecord]:
        """The suite's root traces (named ``suite.trace_name``) of one UTC day."""
        ...


class LocalTraceSource:
    """``<dataset>/traces/<YYYY-MM-DD>.jsonl``: one root observation per line."""

    @property
    def description(self) -> str:
        return "local (<dataset>/traces/<day>.jsonl)"

    def path(self, suite: Suite, day: date) -> Path:
        return suite.dataset_dir / "traces" / f"{day.isoformat()}.jsonl"

    def traces(self, suite: Suite, day: date) -> Iterator[TraceRecord]:
        path = self.path(suite, day)
        if not path.exists():
            return iter(())
        return (t for t in read_trace_file(path) if t.name == suite.trace_name)


class LangfuseTraceSource(LangfuseService):
    """Root observations named ``trace_name`` whose start time falls on ``day`` (UTC)."""

    api: str = "v2"  # becomes "v1" once the server has answered v2 with a 404

    def traces(self, suite: Suite, day: date) -> Iterator[TraceRecord]:
        if self.api == "v2":
            try:
                yield from self._v2(suite.trace_name, day)
                return
            except _V2Missing:
                self.api = "v1"
        yield from self._v1(suite.trace_name, day)

    def _failed(self, trace_name: str, day: date, exc: Exception, where: str) -> TraceSourceError:
        return TraceSourceError(f"reading {trace_name} traces for {day} from "
                                f"{self.description}: {describe_error(exc)} ({where})")  # fmt: skip

    def _v2(self, trace_name: str, day: date) -> Iterator[TraceRecord]:
        start, end = day_window(day)
        cursor: str | None = None
        page = 0
        while True:
            page += 1
            try:
                response = self.client.api.observations.get_many(
                    fields=FIELDS, expand_metadata="user_feedback", limit=PAGE_SIZE,
                    cursor=cursor, name=trace_name, is_root_observation=True,
                    from_start_time=start, to_start_time=end,
                    request_options={"timeout_in_seconds": self.timeout_s, "max_retries": 2},
                )  # fmt: skip
            except (ApiError, httpx.HTTPError) as exc:
                if page == 1 and getattr(exc, "status_code", None) == 404:
                    raise _V2Missing from exc
                raise self._failed(trace_name, day, exc, f"v2 observations, page {page}") from exc
            for i, observation in enumerate(response.data):
                raw = observation.model_dump(by_alias=True, mode="json")
                if raw.get("isRootObservation") is not False:  # (a server may ignore the filter)
                    yield _parse(raw, f"{self.description} page {page} item {i}")
            cursor = response.meta.cursor
            if not cursor:
                return

    def _v1(self, trace_name: str, day: date) -> Iterator[TraceRecord]:
        """GET /api/public/observations (v3 servers): every observation with the name.
        Those without a parent are roots; if some have one, a second pass takes those whose
        parent is not among the named ones (a remote parent). Numbered pages may shift when
        rows arrive meanwhile: ids are de-duplicated."""
        named: set[str] = set()
        parented = False
        for raw, where in self._v1_rows(trace_name, day):
            if raw.get("id") in named:
                continue
            named.add(raw.get("id"))
            if raw.get("parentObservationId"):
                parented = True
            else:
                yield _parse(raw, where)
        if not parented:
            return
        taken: set[str] = set()
        for raw, where in self._v1_rows(trace_name, day):
            parent = raw.get("parentObservationId")
            if parent and parent not in named and raw.get("id") not in taken:
                taken.add(raw.get("id"))
                yield _parse(raw, where)

    def _v1_rows(self, trace_name: str, day: date) -> Iterator[tuple[dict[str, Any], str]]:
        start, end = day_window(day)
        params = {"name": trace_name, "fromStartTime": start.isoformat(),
                  "toStartTime": end.isoformat(), "limit": V1_PAGE_SIZE}  # fmt: skip
        page, pages = 0, 1
        with self.settings.http(self.timeout_s) as http:
            while page < pages:
                page += 1
                try:
                    response = http.get("/api/public/observations", params={**params, "page": page})
                    response.raise_for_status()
                    body = response.json()
                except (httpx.HTTPError, ValueError) as exc:
                    where = f"v1 observations, page {page}"
                    if getattr(getattr(exc, "response", None), "status_code", None) == 404:
                        where += ("; the server serves neither observations API: on v3 set "
                                  "LANGFUSE_MIGRATION_V4_ALLOW_PREVIEW_OPT_IN=true, or see "
                                  "docs/langfuse.md")  # fmt: skip
                    raise self._failed(trace_name, day, exc, where) from exc
                pages = int((body.get("meta") or {}).get("totalPages") or 0)
                for i, raw in enumerate(body.get("data") or []):
                    yield raw, f"{self.description} v1 page {page} item {i}"


class _V2Missing(Exception):
    """The server has no v2 observations API (404)."""


def _parse(raw: dict[str, Any], where: str) -> TraceRecord:
    try:
        return parse_observation(raw, source=where)
    except TraceError as exc:
        raise TraceSourceError(str(exc)) from exc
