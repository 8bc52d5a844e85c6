"""Production traces: the root observation of one agent run, parsed and bounded.

The shape is the one Langfuse's v2 observations API returns (camelCase: ``id``,
``traceId``, ``name``, ``startTime``, ``endTime``, ``input``, ``output``, ``metadata``,
``level``, ``statusMessage``, ``usageDetails``, ``costDetails``, ``latency``, ``tags``);
local JSONL files use the same shape, one observation per line. By convention the root
observation's input is the case input and its output the agent's output contract.
Input/output may arrive as JSON text (the v2 API returns them as strings).

Trace content is data: it is parsed as JSON only, never evaluated. Oversized fields are
truncated with a note and bytes that are not UTF-8 are replaced, so one odd trace cannot
stop a day's scoring; a line that is not an observation at all is an error naming the
file, the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.scoring.apply import Evaluator, evaluate_one
from eval_pipeline.core.store.records import ItemScore

MAX_FIELD_CHARS = 64_000  # per input / output / metadata, as JSON text


class TraceError(ConfigurationError):
    """A trace (or a trace file) cannot be used; the message says where and why."""


@dataclass(frozen=True)
class TraceRecord:
    trace_id: str
    observation_id: str
    name: str
    start_time: datetime
    input: Any = None
    output: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    level: str = "DEFAULT"
    status_message: str | None = None
    latency_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None: the observation carries no cost (not zero)
    notes: tuple[str, ...] = ()  # what parsing had to change (truncation, bad bytes)
    environment: str | None = None  # the trace's Langfuse environment: its scores go there

    def lookup(self, path: str) -> Any:
        """A dotted path into the record, e.g. ``metadata.category`` or ``level``."""
        head, _, rest = path.partition(".")
        value: Any = getattr(self, head, None)
        for part in rest.split(".") if rest else []:
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def evaluator_metadata(self) -> dict[str, Any]:
        """What reference-free evaluators read besides input and output."""
        return {**self.metadata, "latency_ms": self.latency_ms, "cost_usd": self.cost_usd,
                "level": self.level, "status_message": self.status_message}  # fmt: skip


@dataclass(frozen=True)
class TraceTotals:
    """Tokens and cost of one trace, summed over all of its observations: Langfuse records
    usage and cost on the generations (under the root span), rarely on the root itself."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None: no observation of the trace records a cost
    observations: int = 0

    def add(self, observation: dict[str, Any]) -> TraceTotals:
        """These totals with one more observation (an API row or a file line)."""
        usage = _dict(observation.get("usageDetails"))
        cost = _recorded_cost(
            observation.get("totalCost"), _dict(observation.get("costDetails")).get("total")
        )
        total = self.cost_usd if cost is None else (self.cost_usd or 0.0) + cost
        return TraceTotals(self.input_tokens + _int(usage.get("input")),
                           self.output_tokens + _int(usage.get("output")), total,
                           self.observations + 1)  # fmt: skip


def with_totals(record: TraceRecord, totals: TraceTotals | None) -> TraceRecord:
    """The root's record with the trace's tokens and cost (all its observations)."""
    if totals is None:
        return record
    return replace(record, input_tokens=totals.input_tokens, output_tokens=totals.output_tokens,
                   cost_usd=totals.cost_usd)  # fmt: skip


def is_root(observation: dict[str, Any]) -> bool:
    """A trace's root: an observation without a parent, or one the SDK marked a root (a
    span started under a remote parent, with ``trace_context``, keeps that parent's id;
    Langfuse v4 says so in ``isRootObservation``)."""
    flag = observation.get("isRootObservation")
    return bool(flag) if isinstance(flag, bool) else not observation.get("parentObservationId")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _recorded_cost(*values: Any) -> float | None:
    """The first cost the observation records; None when it records none. A root span
    usually has none of its own (Langfuse puts cost on generations): that is unknown, and
    a cost budget must not pass on it."""
    found = next((v for v in values if isinstance(v, int | float)), None)
    return float(found) if found is not None else None


def day_window(day: date) -> tuple[datetime, datetime]:
    """[start, end) of a UTC day."""
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def parse_observation(obj: Any, *, source: str = "trace") -> TraceRecord:
    if not isinstance(obj, dict):
        raise TraceError(f"{source}: expected a JSON object (an observation), got "
                         f"{type(obj).__name__}")  # fmt: skip
    problems = [
        f"field {key!r}: required, a non-empty string"
        for key in ("id", "traceId", "startTime")
        if not isinstance(obj.get(key), str) or not obj.get(key)
    ]
    start = _time(obj.get("startTime"))
    if not problems and start is None:
        problems.append(f"field 'startTime': not an ISO timestamp: {obj.get('startTime')!r}")
    if problems or start is None:  # (start is None: a problem above says so)
        raise TraceError(f"{source}: " + "; ".join(problems))
    notes: list[str] = []
    usage = found if isinstance(found := obj.get("usageDetails"), dict) else {}
    cost = found if isinstance(found := obj.get("costDetails"), dict) else {}
    metadata = _bounded("metadata", _json_value(obj.get("metadata")), notes)
    latency = obj.get("latency")
    end = _time(obj.get("endTime"))
    if not isinstance(latency, int | float) and end is not None:
        latency = (end - start).total_seconds()
    return TraceRecord(
        trace_id=obj["traceId"],
        observation_id=obj["id"],
        name=str(obj.get("name") or obj.get("traceName") or ""),
        start_time=start,
        input=_bounded("input", _json_value(obj.get("input")), notes),
        output=_bounded("output", _json_value(obj.get("output")), notes),
        metadata=metadata if isinstance(metadata, dict) else {"value": metadata},
        tags=tuple(str(t) for t in obj.get("tags") or ()),
        level=str(obj.get("level") or "DEFAULT").upper(),
        status_message=obj.get("statusMessage"),
        latency_ms=float(latency) * 1000 if isinstance(latency, int | float) else None,
        input_tokens=_int(usage.get("input")),
        output_tokens=_int(usage.get("output")),
        cost_usd=_recorded_cost(obj.get("totalCost"), cost.get("total")),
        notes=tuple(notes),
        environment=obj.get("environment") if isinstance(obj.get("environment"), str) else None,
    )


def _lines(path: Path) -> Iterator[tuple[Any, str, bool]]:
    """Each JSON line of a trace file: (value, "file:line", whether bytes were replaced);
    one line in memory at a time."""
    with Path(path).open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
                bad_bytes = False
            except UnicodeDecodeError:
                line, bad_bytes = raw.decode("utf-8", errors="replace"), True
            if not line.strip():
                continue
            try:
                yield json.loads(line), where, bad_bytes
            except json.JSONDecodeError as exc:
                raise TraceError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); "
                                 "fix or remove the line") from None  # fmt: skip


def _record(obj: Any, where: str, bad_bytes: bool) -> TraceRecord:
    record = parse_observation(obj, source=where)
    if bad_bytes:
        record = _with_note(record, "bytes that are not UTF-8 were replaced with U+FFFD")
    return record


def read_trace_file(path: Path) -> Iterator[TraceRecord]:
    """Stream a JSONL file of observations, each line as a record."""
    for obj, where, bad_bytes in _lines(path):
        yield _record(obj, where, bad_bytes)


def read_trace_day(path: Path, trace_name: str) -> Iterator[TraceRecord]:
    """The roots of the traces named ``trace_name`` in a day's JSONL file, each with the
    tokens and cost of all of its observations (a file may hold the generations under a
    root, one per line, as Langfuse exports them). Two passes over the file: the totals
    per trace first (a few numbers per trace in memory), then the roots."""
    totals: dict[str, TraceTotals] = {}
    for obj, where, bad_bytes in _lines(path):
        record = _record(obj, where, bad_bytes)  # (every line is validated)
        totals[record.trace_id] = totals.get(record.trace_id, TraceTotals()).add(obj)
    for obj, where, bad_bytes in _lines(path):
        if is_root(obj) and (obj.get("traceName") or obj.get("name")) == trace_name:
            record = _record(obj, where, bad_bytes)
            yield with_totals(record, totals.get(record.trace_id))


def score_traces(
    records: Iterable[TraceRecord], evaluators: Sequence[Evaluator]
) -> list[ItemScore]:
    """Reference-free scores: item id = trace id, no expected output."""
    return [
        score
        for r in records
        for fn in evaluators
        for score in evaluate_one(
            fn,
            item_id=r.trace_id,
            repeat=0,
            input=r.input,
            output=r.output,
            expected_output=None,
            metadata=r.evaluator_metadata(),
        )
    ]


def _with_note(record: TraceRecord, note: str) -> TraceRecord:
    return replace(record, notes=(*record.notes, note))


def _json_value(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _bounded(name: str, value: Any, notes: list[str]) -> Any:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_FIELD_CHARS:
        return value
    notes.append(f"{name} truncated from {len(text)} to {MAX_FIELD_CHARS} characters")
    return {"_truncated": True, "preview": text[:MAX_FIELD_CHARS]}


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
