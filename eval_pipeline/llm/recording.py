"""Record and replay model calls at the HTTP layer, so a suite runs in CI without tokens.

``eval-pipeline run --record`` stores every request the model client sends and the answer
it got, keyed by the request's canonical content (endpoint + JSON body with sorted keys).
``--replay`` answers from those recordings with no endpoint at all. A request that was
never recorded (a changed prompt, case, model or parameter) is a miss: the item fails with
an error saying what differs from the closest recorded request; it never passes silently.

The file is JSON Lines, one request per line, sorted by key so re-recording gives small
diffs; one per suite and prompt version (``recordings/<suite>/<version>.jsonl`` next to
the project file): commit them, and CI replays both sides of a gate.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

try:  # the HTTP library the OpenAI SDK is built on: httpx2 from openai 3, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed openai
    import httpx  # type: ignore[no-redef]

Mode = Literal["record", "replay"]
_OPEN: dict[Path, Recordings] = {}
_OPEN_LOCK = threading.Lock()


class ReplayMiss(Exception):
    """No recorded answer for a request; retrying cannot help."""


@dataclass(frozen=True)
class Entry:
    key: str
    endpoint: str
    request: Any
    status: int
    response: Any


class Recordings:
    """One suite's recordings file, loaded once per process and path."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.entries: dict[str, Entry] = {}
        self.lock = threading.Lock()
        if self.path.exists():
            for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                    entry = Entry(raw["key"], raw["endpoint"], raw["request"], int(raw["status"]),
                                  raw["response"])  # fmt: skip
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(
                        f"{self.path}:{number}: not a recorded request ({exc}); re-record with "
                        "`eval-pipeline run --record`"
                    ) from exc
                self.entries[entry.key] = entry

    @classmethod
    def open(cls, path: Path) -> Recordings:
        path = Path(path).resolve()
        with _OPEN_LOCK:
            if path not in _OPEN:
                _OPEN[path] = cls(path)
            return _OPEN[path]

    def start_recording(self) -> None:
        """A recording run starts from an empty file: it holds exactly that run's calls."""
        with self.lock:
            self.entries.clear()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("", encoding="utf-8")

    def put(self, entry: Entry) -> None:
        """Append as it comes (a crash keeps what was recorded); ``finish`` sorts."""
        with self.lock:
            self.entries[entry.key] = entry
            with self.path.open("a", encoding="utf-8") as file:
                file.write(_line(entry))

    def finish(self) -> None:
        """Rewrite the file sorted by key, one line per request (small diffs in git)."""
        with self.lock:
            ordered = sorted(self.entries.values(), key=lambda e: e.key)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text("".join(_line(e) for e in ordered), encoding="utf-8")
            tmp.replace(self.path)

    def miss(self, endpoint: str, body: Any) -> ReplayMiss:
        """The error for an unrecorded request, naming what differs from the closest one."""
        candidates = [e for e in self.entries.values() if e.endpoint == endpoint]
        where = f"{self.path} ({len(self.entries)} recorded request(s))"
        if not candidates:
            return ReplayMiss(
                f"no recorded answer for {endpoint}: {where} holds none; record with "
                "`eval-pipeline run --record` against a model endpoint"
            )
        closest = max(candidates, key=lambda e: _likeness(e.request, body))
        diff = first_difference(closest.request, body)
        return ReplayMiss(
            f"no recorded answer for this {endpoint} request in {where}; the closest recorded "
            f"request differs at {diff}. The prompt, the case, the model or its parameters "
            "changed since recording: re-record with `eval-pipeline run --record`"
        )


def _line(entry: Entry) -> str:
    return json.dumps(vars(entry), sort_keys=True, ensure_ascii=False) + "\n"


def request_key(endpoint: str, body: Any) -> str:
    canonical = json.dumps([endpoint, body], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)  # fmt: skip
    return hashlib.sha256(canonical.encode()).hexdigest()


def _endpoint(request: httpx.Request) -> str:
    """The API route without the base URL: 'chat/completions', 'models', …"""
    path = request.url.path.rstrip("/")
    for marker in ("/chat/completions", "/completions", "/embeddings", "/models"):
        if path.endswith(marker):
            return marker.lstrip("/")
    return path.rsplit("/", 1)[-1]


def _body(request: httpx.Request) -> Any:
    content = request.content
    if not content:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return content.decode("utf-8", errors="replace")


class RecordingTransport(httpx.AsyncBaseTransport):
    """Forwards requests and records the answers (record) or answers from the recordings
    without any network (replay)."""

    def __init__(self, recordings: Recordings, mode: Mode, inner: httpx.AsyncBaseTransport):
        self.recordings, self.mode, self.inner = recordings, mode, inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        endpoint, body = _endpoint(request), _body(request)
        key = request_key(endpoint, body)
        if self.mode == "replay":
            entry = self.recordings.entries.get(key)
            if entry is None:  # an answer, not a transport error: clients do not retry a 404
                error = {"message": str(self.recordings.miss(endpoint, body)),
                         "type": "replay_miss"}  # fmt: skip
                return httpx.Response(404, json={"error": error}, request=request)
            return httpx.Response(entry.status, json=entry.response, request=request)
        response = await self.inner.handle_async_request(request)
        content = await response.aread()
        try:
            answer = json.loads(content)
        except ValueError:
            answer = content.decode("utf-8", errors="replace")
        self.recordings.put(Entry(key, endpoint, body, response.status_code, answer))
        return httpx.Response(response.status_code, headers=response.headers, content=content,
                              request=request)  # fmt: skip

    async def aclose(self) -> None:
        await self.inner.aclose()


def _likeness(recorded: Any, body: Any) -> int:
    """How much of ``body`` a recorded request shares: equal top-level fields, then the
    length of the common message prefix."""
    if not isinstance(recorded, dict) or not isinstance(body, dict):
        return 0
    same = sum(1 for k, v in body.items() if recorded.get(k) == v)
    prefix = 0
    for a, b in zip(recorded.get("messages") or [], body.get("messages") or [], strict=False):
        if a != b:
            break
        prefix += 1
    return same * 1000 + prefix


def first_difference(recorded: Any, body: Any, path: str = "") -> str:
    """The first place (a dotted path) where two JSON values differ, with both sides."""
    if isinstance(recorded, dict) and isinstance(body, dict):
        for key in sorted(recorded.keys() | body.keys()):
            if recorded.get(key) != body.get(key):
                return first_difference(recorded.get(key), body.get(key), f"{path}.{key}")
    elif isinstance(recorded, list) and isinstance(body, list) and recorded != body:
        for i, (a, b) in enumerate(zip(recorded, body, strict=False)):
            if a != b:
                return first_difference(a, b, f"{path}[{i}]")
        return f"{path or 'the request'} (recorded {len(recorded)} entries, now {len(body)})"
    return f"{path.lstrip('.') or 'the request'} (recorded {_short(recorded)}, now {_short(body)})"


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
