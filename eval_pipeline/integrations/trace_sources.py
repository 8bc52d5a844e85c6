"""Where production traces come from: Langfuse or local JSONL files.

Both yield the root observations of one suite's agent for one UTC day, parsed into
``TraceRecord``s (memory holds a few numbers per trace, never the day's observations; on
v3, the day's roots of the suite's traces too). A trace's tokens and cost are the sums
over all of its observations: Langfuse records usage and cost on the generations, which
sit under the root span.

Langfuse v4 serves the v2 observations API (cursor pages of 1,000) with a ``filter`` on the
trace's name and environment; self-hosted v3 answers it 404 unless a preview flag is set,
and serves the v1 API instead (numbered pages of at most 100, no root filter, no trace
name, no trace tags), whose traces API names the suite's traces. The server's version
(``/api/public/health``) picks the API; when it cannot be read we ask v2 and fall back to
v1 on its 404. Either way, traces in the evaluation environment (``sdk-experiment``, or
``EVAL_LANGFUSE_ENVIRONMENT``) are left out: they are our own runs, not production.

A root is an observation without a parent, or one the SDK started under a remote parent
(``trace_context``: distributed tracing), which keeps that parent's id. v4 tells them
apart (``isRootObservation``); from v1 we take those without a parent, and in a trace
that has none, its earliest observation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import httpx
from langfuse.api.core.api_error import ApiError

from eval_pipeline.core.errors import ServiceError
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.core.traces.observations import (
    TraceError,
    TraceRecord,
    TraceTotals,
    day_window,
    parse_observation,
    read_trace_day,
    with_totals,
)
from eval_pipeline.integrations.langfuse_client import (
    DEFAULT_ENVIRONMENT,
    LangfuseService,
    describe_error,
    major_version,
)

# Field groups of GET /api/public/v2/observations that the parser needs, nothing more.
# With "io" among them metadata comes untruncated (else each value is cut at 200 chars).
FIELDS = "core,basic,io,metadata,usage,metrics,trace_context"
PAGE_SIZE = 1000
V1_PAGE_SIZE = 100  # the v1 API's maximum
# A trace's generations may start after midnight when its root started before: its totals
# are read from observations up to this long after the day.
CHILD_GRACE = timedelta(hours=1)
NO_GRACE = timedelta(0)


class TraceSourceError(ServiceError):
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
        return read_trace_day(path, suite.trace_name)


class LangfuseTraceSource(LangfuseService):
    """The roots of the traces named ``suite.trace_name`` that started on ``day`` (UTC),
    outside the evaluation environment, each with the tokens and cost of all of the
    trace's observations."""

    api: str | None = None  # "v2" or "v1": from the server's version, on first use

    def traces(self, suite: Suite, day: date) -> Iterator[TraceRecord]:
        if self.api is None:
            self.api = self._api()
        if self.api == "v2":
            try:
                yield from self._v2(suite.trace_name, day)
                return
            except _V2Missing:
                self.api = "v1"
        yield from self._v1(suite.trace_name, day)

    def _api(self) -> str:
        """v2 observations on v4 servers; v1 on v3, whose default (legacy) write mode keeps
        the v2 tables empty. An unreadable version: v2, and v1 on its 404."""
        try:
            return "v1" if major_version(self.settings.server_version()) < 4 else "v2"
        except (httpx.HTTPError, ValueError):
            return "v2"

    @property
    def _excluded(self) -> list[str]:
        """Environments that hold no production traffic: our evaluation runs' and the SDK's
        own experiments'."""
        return sorted({self.settings.environment, DEFAULT_ENVIRONMENT})

    def _failed(self, trace_name: str, day: date, exc: Exception, where: str) -> TraceSourceError:
        return TraceSourceError(f"reading {trace_name} traces for {day} from "
                                f"{self.description}: {describe_error(exc)} ({where})")  # fmt: skip

    def _v2(self, trace_name: str, day: date) -> Iterator[TraceRecord]:
        start, end = day_window(day)
        totals: dict[str, TraceTotals] = {}
        for raw, _ in self._v2_rows(trace_name, day, "core,usage", start, end + CHILD_GRACE):
            totals[raw["traceId"]] = totals.get(raw["traceId"], TraceTotals()).add(raw)
        for raw, where in self._v2_rows(trace_name, day, FIELDS, start, end, roots=True):
            if raw.get("isRootObservation") is not False:  # (a server may ignore the filter)
                yield with_totals(_parse(raw, where), totals.get(raw["traceId"]))

    def _v2_rows(
        self, trace_name: str, day: date, fields: str, start: datetime, end: datetime,
        *, roots: bool = False,
    ) -> Iterator[tuple[dict[str, Any], str]]:  # fmt: skip
        """GET /api/public/v2/observations with a ``filter`` (it takes precedence over the
        query-parameter filters, which cannot name the trace): the trace's name, not the
        observation's, and the environment (the columns and operators are the API's, see
        the SDK's ``observations.get_many`` docstring, generated from the server's spec)."""
        conditions = [
            {"type": "string", "column": "traceName", "operator": "=", "value": trace_name},
            {"type": "stringOptions", "column": "environment", "operator": "none of",
             "value": self._excluded},
            {"type": "datetime", "column": "startTime", "operator": ">=",
             "value": start.isoformat()},
            {"type": "datetime", "column": "startTime", "operator": "<", "value": end.isoformat()},
        ]  # fmt: skip
        if roots:
            conditions.append(
                {"type": "boolean", "column": "isRootObservation", "operator": "=", "value": True}
            )
        cursor: str | None = None
        page = 0
        while True:
            page += 1
            try:
                response = self.client.api.observations.get_many(
                    fields=fields, expand_metadata="user_feedback", limit=PAGE_SIZE,
                    cursor=cursor, filter=json.dumps(conditions),
                    request_options={"timeout_in_seconds": self.timeout_s, "max_retries": 2},
                )  # fmt: skip
            except (ApiError, httpx.HTTPError) as exc:
                if page == 1 and getattr(exc, "status_code", None) == 404:
                    raise _V2Missing from exc
                raise self._failed(trace_name, day, exc, f"v2 observations, page {page}") from exc
            for i, observation in enumerate(response.data):
                raw = observation.model_dump(by_alias=True, mode="json")
                yield raw, f"{self.description} page {page} item {i}"
            cursor = response.meta.cursor
            if not cursor:
                return

    def _v1(self, trace_name: str, day: date) -> Iterator[TraceRecord]:
        """v3 servers. The v1 observations API filters on neither the trace's name nor
        its environment, so GET /api/public/traces names the day's traces first (by trace
        name, its environment kept out when it is ours); then one pass over the day's
        observations sums each trace's totals and finds its roots: the observations
        without a parent or, in a trace that has none (its root started under a remote
        parent: distributed tracing), its earliest one. Numbered pages may shift when rows
        arrive meanwhile: ids are de-duplicated."""
        named = self._v1_traces(trace_name, day)
        totals: dict[str, TraceTotals] = {}
        roots: dict[str, dict[Any, tuple[dict[str, Any], str]]] = {}  # by the root's id
        earliest: dict[str, tuple[dict[str, Any], str]] = {}
        for raw, where in self._v1_rows({}, trace_name, day, grace=CHILD_GRACE):
            trace_id = raw.get("traceId")
            if not trace_id:
                continue
            totals[trace_id] = totals.get(trace_id, TraceTotals()).add(raw)
            if trace_id not in named:
                continue
            if not raw.get("parentObservationId"):
                roots.setdefault(trace_id, {})[raw.get("id")] = (raw, where)
            elif (best := earliest.get(trace_id)) is None or str(raw.get("startTime")) < str(
                best[0].get("startTime")
            ):
                earliest[trace_id] = (raw, where)
        for trace_id in named:
            found = list(roots.get(trace_id, {}).values())
            if not found and trace_id in earliest:
                found = [earliest[trace_id]]
            for raw, where in found:
                yield with_totals(_parse(raw, where), totals.get(trace_id))

    def _v1_traces(self, trace_name: str, day: date) -> list[str]:
        """The ids of the day's traces named ``trace_name`` outside the evaluation
        environments (GET /api/public/traces, GetTracesV1Query in langfuse/langfuse
        web/src/features/public-api/types/traces.ts: name, environment, from/toTimestamp,
        numbered pages of at most 100), oldest first."""
        start, end = day_window(day)
        params = {"name": trace_name, "fromTimestamp": start.isoformat(), "fields": "core",
                  "toTimestamp": end.isoformat()}  # fmt: skip
        found: dict[str, str] = {}
        for trace, _ in self._v1_pages("traces", params, trace_name, day):
            if trace.get("environment") not in self._excluded:
                found[trace["id"]] = str(trace.get("timestamp"))
        return sorted(found, key=lambda t: (found[t], t))

    def _v1_rows(
        self, query: dict[str, str], trace_name: str, day: date, *, grace: timedelta = NO_GRACE
    ) -> Iterator[tuple[dict[str, Any], str]]:
        start, end = day_window(day)
        params = {**query, "fromStartTime": start.isoformat(),
                  "toStartTime": (end + grace).isoformat()}  # fmt: skip
        yield from self._v1_pages("observations", params, trace_name, day)

    def _v1_pages(
        self, what: str, params: dict[str, str], trace_name: str, day: date
    ) -> Iterator[tuple[dict[str, Any], str]]:
        """Every row of GET /api/public/<what> (numbered pages of V1_PAGE_SIZE), with where
        it came from; a failure is the read's failure, naming the page."""
        page, pages = 0, 1
        with self.settings.http(self.timeout_s) as http:
            while page < pages:
                page += 1
                query: dict[str, Any] = {**params, "limit": V1_PAGE_SIZE, "page": page}
                try:
                    response = http.get(f"/api/public/{what}", params=query)
                    response.raise_for_status()
                    body = response.json()
                except (httpx.HTTPError, ValueError) as exc:
                    where = f"v1 {what}, page {page}"
                    if getattr(getattr(exc, "response", None), "status_code", None) == 404:
                        where += ("; the server serves no v1 API: on v3 set "
                                  "LANGFUSE_MIGRATION_V4_ALLOW_PREVIEW_OPT_IN=true for v2, "
                                  "or see docs/langfuse.md")  # fmt: skip
                    raise self._failed(trace_name, day, exc, where) from exc
                pages = int((body.get("meta") or {}).get("totalPages") or 0)
                for i, raw in enumerate(body.get("data") or []):
                    yield raw, f"{self.description} v1 {what} page {page} item {i}"


class _V2Missing(Exception):
    """The server has no v2 observations API (404)."""


def _parse(raw: dict[str, Any], where: str) -> TraceRecord:
    try:
        return parse_observation(raw, source=where)
    except TraceError as exc:
        raise TraceSourceError(str(exc)) from exc
