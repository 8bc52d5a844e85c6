"""Where production traces come from: Langfuse (v2 observations API) or local JSONL files.

Both yield the root observations of one suite's agent for one UTC day, parsed into
``TraceRecord``s one at a time (streaming: memory does not grow with the day's volume).
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
FIELDS = "core,basic,io,metadata,usage,metrics,trace_context"
PAGE_SIZE = 1000


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

    def traces(self, suite: Suite, day: date) -> Iterator[TraceRecord]:
        trace_name = suite.trace_name
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
                raise TraceSourceError(
                    f"reading {trace_name} traces for {day} from {self.description}: "
                    f"{describe_error(exc)} (page {page})"
                ) from exc
            for i, observation in enumerate(response.data):
                yield _parse(observation, f"{self.description} page {page} item {i}")
            cursor = response.meta.cursor
            if not cursor:
                return


def _parse(observation: Any, where: str) -> TraceRecord:
    raw = observation.model_dump(by_alias=True, mode="json")
    try:
        return parse_observation(raw, source=where)
    except TraceError as exc:
        raise TraceSourceError(str(exc)) from exc
