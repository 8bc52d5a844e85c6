"""Record and replay every outbound HTTP call of a run, whoever makes it.

``eval-pipeline run --record`` sends every request the run makes and stores it with its
answer; ``--replay`` answers each from the file, and nothing reaches the network. "Every"
means every HTTP client in the process while the run's items and judges run: the
``ctx.model`` we build, a module-level ``ChatOpenAI`` or ``ChatAnthropic``, an SDK client the
agent's factory built, sync or async, a tool that calls a web API with ``requests`` or
``httpx``. Our own traffic is neither recorded nor blocked: Langfuse (tracing, scores),
the agent service an HTTP agent is (that is the thing under test), the results store and
Dagster (not HTTP).

How: vcrpy's stubs patch the transports of httpx, httpx2 (the OpenAI SDK's), aiohttp and
tornado while a session is open, and hand each request to ``RecordingSession`` (vcrpy's
cassette protocol); urllib3's ``urlopen`` (requests, botocore) is wrapped here (see
``skip_patchers``). The session matches a request by its method, path, query and JSON
body with sorted keys, timestamps to the second masked, a model call's made-up ids and
generated values (uuids, ULIDs, a project's own patterns) by their order of appearance
(``compared``, core/running/ids.py) (not the host: a recording made
against ``http://127.0.0.1:8080/v1`` answers the same request sent to
``https://api.openai.com/v1``), so a lookup is one hash however many requests are
recorded, and concurrent items never wait on each other. During replay the process is
sealed (core/running/seal.py): a connection or datagram the interception did not answer
(another client, a raw or C-level socket, UDP) and any new process (``subprocess``,
``os.system``) are refused, except our own hosts.

Nothing passes silently. A request the recordings cannot answer (a changed prompt, case,
model or parameter) gets an error answer naming what differs from the closest recorded
request, and the item it belongs to fails with kind "replay miss" whatever the agent did
with that answer (core/running/agent.py ``ItemProblem``); a refused connection fails its
item with kind "escaped call". Both are infrastructure failures: the run's verdict is
ERROR (exit 2). ``shortfall`` refuses a recording that missed model calls the token
counter saw, or that holds nothing at all.

The file (``recordings/<suite>/<version>.jsonl`` next to the project file) holds one
request per line, sorted by the item that made it and its order there; the fields that
change on every answer (``id``, ``created``, ``system_fingerprint``) are normalised and
only the content type of the headers is kept, so re-recording gives small diffs. Keys
are never stored: they are derived from the request when the file is read. Secrets are
never stored either, in requests or answers (core/util/redact.py ``scrub``,
``scrub_answer``): an OAuth endpoint's ``access_token`` is recorded as ``***``, and the
requests that send it on are recorded with ``***`` in its place, which is what the agent
sends when the recording hands it ``***``.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import io
import json
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.running.agent import ItemProblem, current_item
from eval_pipeline.core.running.ids import (
    Generated,
    Steadied,
    mask_times,
    steadied,
    translate,
    translation,
)
from eval_pipeline.core.running.seal import Seal, sealed
from eval_pipeline.core.store.records import ItemOutput
from eval_pipeline.core.util import safe_yaml
from eval_pipeline.core.util.redact import redact_url, scrub, scrub_answer, scrub_form
from eval_pipeline.llm.offline.model import OFFLINE_MODEL_NAME

Mode = Literal["record", "replay"]
# Routes that are model calls (a chat or completion by any common provider's API): the
# calls the token counter sees, so a recording can be checked against it.
MODEL_ROUTES = ("/chat/completions", "/completions", "/responses", "/messages",
                ":generateContent", ":streamGenerateContent", "/converse", "/api/chat",
                "/api/generate")  # fmt: skip
# Routes whose bodies carry the agent's own text, so generated values made steady: the
# model calls, and embeddings (a store's search embeds a query that may quote a memory's
# uuid, as langchain-ai/memory-agent's does).
STEADIED_ROUTES = (*MODEL_ROUTES, "/embeddings")
VOLATILE = {"id": None, "created": 0, "system_fingerprint": None}  # see _steady
_ACTIVE = threading.Lock()  # one session per process at a time (the patches are global)


class RecordingsError(ConfigurationError):
    """A recordings file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Entry:
    """One recorded request and its answer."""

    method: str
    url: str
    request: Any  # the body: JSON, text, or None
    status: int
    content_type: str | None
    response: Any  # JSON, or text
    item: str | None = None  # "case#repeat" of the item that made it (None: outside items)
    call: int = 0  # its order among that item's requests

    def key(self, generated: Generated | None = None) -> str:
        return request_key(self.method, self.url, self.request, generated)

    @property
    def route(self) -> str:
        return f"{self.method} {urlsplit(self.url).path}"

    def line(self) -> str:
        fields = {"item": self.item, "call": self.call, "method": self.method, "url": self.url,
                  "request": self.request, "status": self.status,
                  "content_type": self.content_type, "response": self.response}  # fmt: skip
        return json.dumps(fields, ensure_ascii=False) + "\n"


def request_key(method: str, url: str, body: Any, generated: Generated | None = None) -> str:
    """What identifies a request: method, path, sorted query and the body as ``matched``
    sees it (JSON with sorted keys), a date with a time of day in it counting as any other
    (an agent that puts "now" into its prompt, as LangChain's react-agent template does,
    asks the same on every run). Not the host or the headers (keys and tokens live there);
    secrets in the URL and the body count as masked (core/util/redact.py: recordings keep them
    masked, and still match). Derived from the request each time a file is read, never
    stored: a recording made before a rule here changed is matched by the rule of today."""
    parts = urlsplit(redact_url(url))
    canonical = json.dumps([method.upper(), parts.path, sorted(parse_qsl(parts.query)),
                            matched(scrub(body), parts.path, generated)], sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)  # fmt: skip
    return hashlib.sha256(mask_times(canonical).encode()).hexdigest()


def matched(body: Any, path: str, generated: Generated | None = None) -> Any:
    """A request body as replay compares it (``compared``'s value)."""
    return compared(body, path, generated).value


def compared(body: Any, path: str, generated: Generated | None = None) -> Steadied:
    """A request body as replay compares it. In a model call or an embedding
    (``STEADIED_ROUTES``): the ids
    the agent or a library made up — tool-call ids, message and run ids, and the uuids,
    ULIDs and ``generated`` patterns anywhere in its text — made steady
    (core/running/ids.py: the same value, the same placeholder, in order of first
    appearance), and the tool definitions as a set (sorted), since a library may build
    them from a set whose order changes with the hash seed (langgraph-supervisor's handoff
    tools). Anything else that differs still misses; a request to any other API (a
    tool's) is compared as it is."""
    if not path.endswith(STEADIED_ROUTES):
        return Steadied(body)
    found = steadied(body, generated)
    if isinstance(found.value, dict) and isinstance(found.value.get("tools"), list):
        found.value["tools"] = sorted(found.value["tools"],
                                      key=lambda t: json.dumps(t, sort_keys=True))  # fmt: skip
    return found


@dataclass(frozen=True)
class Belongs:
    """What a recording was made for: the suite and its prompt version (``v0``: none)."""

    suite: str
    version: str


FORMAT = 2  # 2: a first line naming the suite, the version and the digest of the rest
RERECORD = "re-record with `eval-pipeline run … --record`"


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _header(belongs: Belongs, body: str, requests: int) -> str:
    """The file's first line: whose requests these are, and a digest of them."""
    return json.dumps({"recording": {"format": FORMAT, "suite": belongs.suite,
                                     "version": belongs.version, "requests": requests,
                                     "sha256": _digest(body)}}) + "\n"  # fmt: skip


def load_entries(path: Path, belongs: Belongs | None = None, rerecord: str = RERECORD,
                 generated: Generated | None = None) -> dict[str, Entry]:  # fmt: skip
    """The recorded requests of ``path`` by key (``request_key``, with ``generated``: the
    project's own patterns of generated values; an absent file holds none). A file is
    refused (``RecordingsError``, naming it and the command that records it again) when
    it has no header line (recorded before recordings carried one, or cut short while
    recording), when it belongs to another suite or version than ``belongs``, or when its
    requests no longer match the digest its header gives (edited by hand, or merged)."""
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RecordingsError(f"{path}: not UTF-8 text (byte {exc.start}); {rerecord}") from None
    first, _, body = text.partition("\n")
    try:
        info = safe_yaml.json_loads(first)["recording"] if first.strip() else None
    except (ValueError, KeyError, TypeError):
        info = None
    if not isinstance(info, dict):
        raise RecordingsError(
            f"{path}: no header line naming the suite, the version and a digest of the "
            "requests (recorded by an older eval-pipeline, or cut short while "
            f"recording); {rerecord}"
        )
    made_for = (info.get("suite"), info.get("version"))
    if belongs is not None and made_for != (belongs.suite, belongs.version):
        raise RecordingsError(
            f"{path}: recorded for suite {made_for[0]!r} {made_for[1]}, not for suite "
            f"{belongs.suite!r} {belongs.version} (copied from another suite or version?); "
            f"{rerecord}"
        )
    if info.get("sha256") != _digest(body):
        raise RecordingsError(
            f"{path}: its requests changed after they were recorded (they do not match the "
            f"digest in its first line: edited by hand, or merged); {rerecord}"
        )
    entries: dict[str, Entry] = {}
    for number, line in enumerate(body.splitlines(), 2):
        if not line.strip():
            continue
        try:
            raw = safe_yaml.json_loads(line)
            entry = Entry(str(raw["method"]), str(raw["url"]), raw["request"], int(raw["status"]),
                          raw.get("content_type"), raw["response"], raw.get("item"),
                          int(raw.get("call") or 0))  # fmt: skip
        except (ValueError, KeyError, TypeError) as exc:
            raise RecordingsError(
                f"{path}:{number}: not a recorded request ({type(exc).__name__}: {exc}); {rerecord}"
            ) from None
        entries[entry.key(generated)] = entry
    return entries


def recorded_model(entries: dict[str, Entry]) -> str | None:
    """The one model the recorded requests name (replay needs no EVAL_LLM_MODEL)."""
    models = {e.request.get("model") for e in entries.values() if isinstance(e.request, dict)}
    models.discard(None)
    return str(next(iter(models))) if len(models) == 1 else None


class RecordingSession:
    """The requests of one run: recorded into ``path``, or answered from it.

    Used as a context manager around the run's stages; while open, vcrpy's stubs route
    every HTTP request of the process here (``can_play_response_for``, ``play_response``,
    ``append``, ``filter_request``, ``write_protected`` are the cassette protocol they
    call). ``ours`` are the ``host:port`` pairs that are not the agent's: passed through.
    """

    custom_patches: tuple = ()
    # vcrpy's stubs of http.client and what is built on it swap the real classes back in
    # for the whole process while one thread opens a connection (its force_reset): a
    # request another thread makes meanwhile is neither recorded nor answered (vcrpy
    # #295, #849; eight threads in a replay lost five of sixteen requests here). urllib3,
    # hence requests and botocore, is intercepted by ``_urllib3`` instead; a bare
    # http.client or urllib.request call is not, and replay's socket guard refuses it.
    skip_patchers = ("httplib", "requests", "urllib3", "boto3", "httplib2")

    def __init__(self, path: Path, mode: Mode, belongs: Belongs, *, ours: Iterable[str] = (),
                 rerecord: str = RERECORD, generated: Generated | None = None):  # fmt: skip
        self.path, self.mode, self.belongs = Path(path), mode, belongs
        self._path = str(self.path)  # (vcrpy names its patched classes after it)
        self.ours = {_host_port(h) for h in ours}
        self.rerecord = rerecord
        self.generated = generated or Generated()
        self.entries: dict[str, Entry] = (load_entries(self.path, belongs, rerecord, generated)
                                          if mode == "replay" else {})  # fmt: skip
        self.lock = threading.Lock()
        self.calls: Counter[str] = Counter()  # requests per item, for their order
        self.model_calls: Counter[str] = Counter()  # recorded model requests per item
        self.misses = 0
        self._stack: contextlib.ExitStack | None = None
        self._seal: Seal | None = None  # replay: the open seal (core/running/seal.py)

    # --- opening and closing --------------------------------------------------------------
    def __enter__(self) -> RecordingSession:
        from vcr.patch import CassettePatcherBuilder

        if not _ACTIVE.acquire(blocking=False):
            raise RuntimeError("a recording session is already open in this process")
        stack = contextlib.ExitStack()
        stack.callback(_ACTIVE.release)
        try:
            for patcher in CassettePatcherBuilder(self).build():
                stack.enter_context(patcher)
            stack.enter_context(_urllib3(self))
            if self.mode == "record":
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.path.write_text("", encoding="utf-8")  # exactly this run's requests
            else:
                self._seal = stack.enter_context(sealed(self.ours, self.rerecord))
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.mode == "record":
                self.save()
        finally:
            stack, self._stack = self._stack, None
            if stack is not None:
                stack.close()

    def save(self) -> None:
        """The file, rewritten sorted (by item, then the order of its requests) under its
        header line (``_header``)."""
        with self.lock:
            ordered = sorted(self.entries.values(), key=_file_order)
        body = "".join(e.line() for e in ordered)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(_header(self.belongs, body, len(ordered)) + body, encoding="utf-8")
        tmp.replace(self.path)

    def shortfall(self, outputs: Sequence[ItemOutput]) -> list[str]:
        """Record mode: why the file does not hold what the run did, if it does not. An
        item whose model calls (counted by the token counter, llm/usage.py) outnumber its
        recorded model requests called a model through something we do not see; a run
        whose items recorded nothing at all has nothing to replay."""
        if self.mode != "record" or not outputs:
            return []
        short = []
        for o in outputs:
            counted = sum(u.get("calls", 0) for u in o.usage.values())
            recorded = self.model_calls[_item_label(o.item_id, o.repeat)]
            if counted > recorded:
                short.append(f"{_item_label(o.item_id, o.repeat)}: {counted} counted, "
                             f"{recorded} recorded")  # fmt: skip
        problems = []
        if short:
            offline = any(OFFLINE_MODEL_NAME in o.usage for o in outputs)
            why = ("the offline model answered them (no HTTP request: set EVAL_LLM_BASE_URL "
                   "for ctx.model)" if offline else "the agent's model client sends them "
                   "through something we cannot intercept")  # fmt: skip
            problems.append(
                f"{len(short)} of {len(outputs)} items made model calls that were not recorded "
                f"({'; '.join(short[:5])}{' …' if len(short) > 5 else ''}): {why}; replaying "
                "this file would not test the agent"
            )
        if not self.entries:
            problems.append(
                f"nothing was recorded: {len(outputs)} items ran and made no HTTP request "
                f"through a client we record (httpx, requests, aiohttp, …); {self.path} "
                "holds nothing to replay"
            )
        return problems

    def escaped(self) -> list[str]:
        """Replay: the calls the seal refused that no running item was charged with (a
        thread left running after its item, one started outside any): each makes the run
        ERROR, as an escaped call fails its item."""
        strays = list(self._seal.strays) if self._seal is not None else []
        if not strays:
            return []
        more = f" (and {len(strays) - 1} more)" if len(strays) > 1 else ""
        return [f"{len(strays)} escaped call(s) outside the items: {strays[0]}{more}"]

    # --- vcrpy's cassette protocol ----------------------------------------------------------
    @property
    def write_protected(self) -> bool:
        return self.mode == "replay"

    def filter_request(self, request: Any) -> Any:
        """None for our own traffic (passed through, never recorded)."""
        return None if (str(request.host).lower(), request.port) in self.ours else request

    def can_play_response_for(self, request: Any) -> bool:
        """Replay answers every request that is not ours: from the file, or with a miss."""
        return self.mode == "replay" and self.filter_request(request) is not None

    def play_response(self, request: Any) -> dict[str, Any]:
        body = _body(request.body)
        entry = self.entries.get(request_key(request.method, request.uri, body, self.generated))
        if entry is not None:
            headers = {"content-type": [entry.content_type]} if entry.content_type else {}
            return _response(entry.status, headers, self.answer(entry, body))
        message = self.miss_message(request.method, request.uri, body)
        with self.lock:
            self.misses += 1
        _report(ItemProblem("replay miss", message))
        error = {"error": {"message": message, "type": "replay_miss", "code": "replay_miss"}}
        # An answer, not a transport error: a client does not retry a 404, and
        # x-should-retry tells the OpenAI SDK so too.
        headers = {"content-type": ["application/json"], "x-should-retry": ["false"]}
        return _response(404, headers, json.dumps(error).encode())

    def answer(self, entry: Entry, body: Any) -> bytes:
        """``entry``'s recorded answer to a request alike but for its draws, each uuid
        (ULID, …) the recorded request held replaced by the one this request drew in its
        place: a model that quotes a memory's name back (to update it) quotes the name this
        run gave it, as it would have live."""
        path = urlsplit(entry.url).path
        values = translation(compared(entry.request, path, self.generated),
                             compared(scrub(body), path, self.generated))  # fmt: skip
        if not values or entry.response is None:
            return _content(entry.response)
        return translate(_content(entry.response).decode("utf-8"), values).encode("utf-8")

    def append(self, request: Any, response: dict[str, Any]) -> None:
        """A request sent in record mode, and its answer (ours never reach here)."""
        if self.mode != "record" or self.filter_request(request) is None:
            return
        from vcr.filters import decode_response

        response = decode_response(response)  # stored readable: gzip and deflate undone
        headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
        content_type = (headers.get("content-type") or [None])[0]
        answer = _body(response["body"].get("string"))
        if headers.get("content-encoding"):  # one we cannot undo: replayed as it came
            content_type = None
        else:  # secrets in the answer stored masked (and masked wherever they appear next)
            answer = _scrubbed_answer(answer, content_type)
        body = _body(request.body)
        scope = current_item.get()
        item = _item_label(scope.case_id, scope.repeat) if scope is not None else None
        with self.lock:
            order = self.calls[item or ""]
            self.calls[item or ""] += 1
            if item is not None and request.path.endswith(MODEL_ROUTES):
                self.model_calls[item] += 1
        key = request_key(request.method, request.uri, body, self.generated)
        entry = Entry(request.method.upper(), redact_url(request.uri), scrub(body),
                      int(response["status"]["code"]),
                      content_type, _steady(answer, key),
                      item, order)  # fmt: skip
        with self.lock:
            self.entries[key] = entry  # a retried request keeps its last answer
            with self.path.open("a", encoding="utf-8") as file:  # a crash keeps what came
                file.write(entry.line())

    def find_requests_with_most_matches(self, request: Any) -> list:
        return []  # (vcrpy's redirect-following asks; our matching is exact)

    # --- what a miss says -----------------------------------------------------------------
    def miss_message(self, method: str, url: str, body: Any) -> str:
        """Which request has no recorded answer and what differs from the closest one."""
        route = f"{method.upper()} {url}"
        where = f"{self.path} ({len(self.entries)} recorded request(s))"
        path, query = urlsplit(url).path, sorted(parse_qsl(urlsplit(url).query))
        candidates = [e for e in self.entries.values()
                      if e.method == method.upper() and urlsplit(e.url).path == path]  # fmt: skip
        if not candidates:
            return (f"replay: no recorded answer for {route}: {where} holds no {method.upper()} "
                    f"{path}; {self.rerecord}")  # fmt: skip
        now = matched(body, path, self.generated)
        closest = max(candidates, key=lambda e: (
            _likeness(matched(e.request, path, self.generated), now),
            _query(e.url) == query))  # fmt: skip
        if _query(closest.url) != query:
            differs = (f"the query (recorded {urlsplit(closest.url).query!r}, now "
                       f"{urlsplit(url).query!r})")  # fmt: skip
        else:
            differs = first_difference(matched(closest.request, path, self.generated), now)
        return (f"replay: no recorded answer for {route} in {where}; the closest recorded "
                f"request differs at {differs}. {_what_changed(differs)} since recording: "
                f"{self.rerecord}")  # fmt: skip


def _what_changed(differs: str) -> str:
    """What a difference at this place in a request means, in the agent's terms."""
    if differs.startswith("tools"):
        return "The tools offered changed (a tool's name, description or parameters)"
    if differs.startswith("messages"):
        return ("A message changed (the prompt, the case, or what a tool or another agent "
                "answered earlier in the item)")  # fmt: skip
    if differs.startswith("model"):
        return "The model changed (EVAL_LLM_MODEL, the prompt's config or the agent's code)"
    if differs.startswith("the query"):
        return "The request's query changed (a tool's arguments)"
    return "The prompt, the case, the model or its parameters changed"


def _query(url: str) -> list[tuple[str, str]]:
    return sorted(parse_qsl(urlsplit(url).query))


def _file_order(entry: Entry) -> tuple:
    """Item by item, each in the order of its requests; requests outside items last."""
    return (entry.item is None, entry.item or "", entry.call, entry.line())


def _item_label(case_id: str, repeat: int) -> str:
    return f"{case_id}#{repeat}"


def _report(problem: ItemProblem) -> None:
    scope = current_item.get()
    if scope is not None:
        scope.report(problem)


def _host_port(text: str) -> tuple[str, int]:
    """``host:port`` or a URL → (host, port)."""
    parts = urlsplit(text if "://" in text else f"//{text}")
    default = 443 if parts.scheme == "https" else 80
    return (parts.hostname or "").lower(), parts.port or default


def _body(raw: Any) -> Any:
    """A request or response body as stored: parsed JSON, else text (JSON nested past what
    ``json`` reads too: ``safe_yaml.json_loads``, as the recordings reader), else None."""
    if raw is None or raw == b"" or raw == "":
        return None
    if isinstance(raw, str):
        raw = raw.encode()
    if not isinstance(raw, bytes | bytearray):  # a file or iterator vcrpy kept as it came
        raw = b"".join(raw) if not hasattr(raw, "read") else raw.read()
    try:
        return safe_yaml.json_loads(bytes(raw))
    except ValueError:
        return bytes(raw).decode("utf-8", errors="replace")


def _scrubbed_answer(answer: Any, content_type: str | None) -> Any:
    """An answer as recorded: secret-named fields masked, a form-encoded token answer too."""
    if isinstance(answer, str) and "x-www-form-urlencoded" in (content_type or ""):
        return scrub_form(answer)
    return scrub_answer(answer)


def _content(value: Any) -> bytes:
    if value is None:
        return b""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


def _response(status: int, headers: dict[str, list[str]], body: bytes) -> dict[str, Any]:
    """A response as vcrpy's stubs rebuild it for the client."""
    return {"status": {"code": status, "message": ""}, "headers": headers,
            "body": {"string": body}}  # fmt: skip


def _steady(answer: Any, key: str) -> Any:
    """The fields that differ on every answer set to constants (the id from the request,
    so it stays unique per request); a server-sent event stream line by line."""
    if isinstance(answer, dict):
        return {k: (f"rec-{key[:24]}" if k == "id" else VOLATILE[k]) if k in VOLATILE else v
                for k, v in answer.items()}  # fmt: skip
    if isinstance(answer, str) and answer.lstrip().startswith("data:"):
        lines = []
        for line in answer.split("\n"):
            head, _, data = line.partition("data:")
            try:
                event = safe_yaml.json_loads(data) if not head and data.strip() else None
            except ValueError:
                event = None
            steady = _steady(event, key) if isinstance(event, dict) else None
            lines.append(f"data: {json.dumps(steady)}" if steady is not None else line)
        return "\n".join(lines)
    return answer


@contextlib.contextmanager
def _urllib3(session: RecordingSession) -> Iterator[None]:
    """Intercept urllib3's ``urlopen`` (every request of ``requests``, botocore, urllib3
    itself) the way vcrpy's stubs intercept httpx: a method wrapped, nothing swapped."""
    try:
        import urllib3
        from urllib3.connectionpool import HTTPConnectionPool
    except ImportError:  # pragma: no cover - urllib3 comes with requests
        yield
        return
    from vcr.request import Request

    original = HTTPConnectionPool.urlopen

    def urlopen(pool: Any, method: str, url: str, body: Any = None, headers: Any = None,
                *args: Any, **kwargs: Any) -> Any:  # fmt: skip
        absolute = url if "://" in url else f"{pool.scheme}://{pool.host}:{pool.port}{url}"
        request = Request(method, absolute, body, dict(headers or {}))
        if session.filter_request(request) is None:
            return original(pool, method, url, body, headers, *args, **kwargs)
        preload = kwargs.pop("preload_content", True)
        decode = kwargs.pop("decode_content", True)
        if session.can_play_response_for(request):
            answer = session.play_response(request)
        else:  # sent as the caller asked, read raw, recorded, and handed back unread
            sent = original(pool, method, url, body, headers, *args,  # type: ignore[misc]
                            preload_content=False, decode_content=False,  # (popped above)
                            **kwargs)  # fmt: skip
            answer = _response(sent.status, {k.lower(): [v] for k, v in sent.headers.items()},
                               sent.read(decode_content=False))  # fmt: skip
            sent.release_conn()
            session.append(request, answer)
        headers_out = [(k, v) for k, values in answer["headers"].items() for v in values]
        return urllib3.HTTPResponse(
            body=io.BytesIO(answer["body"]["string"]), headers=urllib3.HTTPHeaderDict(headers_out),
            status=answer["status"]["code"], preload_content=preload, decode_content=decode,
            request_method=method, request_url=absolute,
        )  # fmt: skip

    HTTPConnectionPool.urlopen = urlopen  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        HTTPConnectionPool.urlopen = original  # type: ignore[method-assign]


# --- what differs -----------------------------------------------------------------------------
def _likeness(recorded: Any, body: Any) -> tuple[int, int, float]:
    """How much of ``body`` a recorded request shares: equal top-level fields, the length
    of the common message prefix, then how alike the rest reads (the same question asked
    in other words beats another question)."""
    if not isinstance(recorded, dict) or not isinstance(body, dict):
        return 0, 0, difflib.SequenceMatcher(None, str(recorded), str(body)).ratio()
    same = sum(1 for k, v in body.items() if recorded.get(k) == v)
    prefix = 0
    for a, b in zip(recorded.get("messages") or [], body.get("messages") or [], strict=False):
        if a != b:
            break
        prefix += 1
    text = lambda value: json.dumps(value, sort_keys=True, ensure_ascii=False)  # noqa: E731
    return same, prefix, difflib.SequenceMatcher(None, text(recorded), text(body)).ratio()


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
    where = path.lstrip(".") or "the request"
    if isinstance(recorded, str) and isinstance(body, str):
        return where + _window(recorded, body)
    return f"{where} (recorded {_short(recorded)}, now {_short(body)})"


def _window(recorded: str, body: str, around: int = 40) -> str:
    """Two texts where they part: both whole when short, else ``around`` characters either
    side of the first character that differs, with its offset (a long system prompt that
    differs on its last line shows that line, not its first 80 characters)."""
    if max(len(recorded), len(body)) <= 2 * around:
        return f" (recorded {recorded!r}, now {body!r})"
    at = next((i for i, (a, b) in enumerate(zip(recorded, body, strict=False)) if a != b),
              min(len(recorded), len(body)))  # fmt: skip
    start = at - around if at > around * 3 // 2 else 0  # (no "…" for a few characters)

    def cut(text: str) -> str:
        part = text[start : at + around]
        return (("…" if start else "") + repr(part)
                + ("…" if at + around < len(text) else ""))  # fmt: skip

    return (f", from character {at} of {len(recorded)} recorded, {len(body)} now "
            f"(recorded {cut(recorded)}, now {cut(body)})")  # fmt: skip


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
