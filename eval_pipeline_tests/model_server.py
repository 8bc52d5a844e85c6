"""A local OpenAI-compatible server: the offline model behind ``POST /v1/chat/completions``,
and ``POST /v1/embeddings`` (a word-hashing embedding: texts that share words are near).

Used by tests (the ChatOpenAI path over real HTTP) and by benchmarks (fixed latency).
Binds to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import uvicorn
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_openai.chat_models.base import _convert_dict_to_message, _convert_message_to_dict
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from eval_pipeline.llm.offline import OfflineChatModel
from eval_pipeline.llm.offline.model import OFFLINE_MODEL_NAME
from eval_pipeline_tests.helpers import EXAMPLES

# The server's model answers as the examples' agents: their behaviours are registered by
# importing their package (also when this module runs as a process of its own).
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
import eval_examples  # noqa: F401

Fault = int | tuple[int, str] | Literal["hang", "reset"] | None
FaultRule = Callable[[dict[str, Any]], Fault]
"""Given a request body: an HTTP status to fail with (429 comes with Retry-After), or a
status and the error message to send, "hang" (never answer), "reset" (send half the
answer, then drop the connection), or None."""
HOST = "127.0.0.1"  # test and benchmark servers are never reachable from other machines
HANG_S = 3600.0
RETRY_AFTER_S = 0.05


def _reset_midway(body: bytes) -> StreamingResponse:
    """Promise the whole body, send half of it, then fail: the server drops the connection."""

    async def halves():
        yield body[: len(body) // 2]
        raise ConnectionResetError("injected: connection reset mid-response")

    return StreamingResponse(halves(), media_type="application/json",
                             headers={"content-length": str(len(body))})  # fmt: skip


class SlidingWindowLimit:
    """At most ``rate`` accepted requests in any one-second window; the rest get a 429 with
    the seconds until a slot frees in Retry-After (and retry-after-ms, as OpenAI sends)."""

    def __init__(self, rate: float):
        self.capacity = max(1, int(rate))
        self.accepted: deque[float] = deque()

    def retry_after(self) -> float | None:
        now = time.monotonic()
        while self.accepted and now - self.accepted[0] >= 1.0:
            self.accepted.popleft()
        if len(self.accepted) < self.capacity:
            self.accepted.append(now)
            return None
        return 1.0 - (now - self.accepted[0])


async def answer_at(due: float, response: Response) -> Response:
    """Hold a ready response until its due time on the loop's clock.

    Sleeping first and computing after would add the model's work, and the wait for every
    other answer due at the same moment, to the fixed latency: at 32 requests in flight the
    benchmark then measured its own server, not the client."""
    delay = due - asyncio.get_running_loop().time()
    if delay > 0:
        await asyncio.sleep(delay)
    return response


@dataclass(frozen=True)
class ServerQuirks:
    """How real OpenAI-compatible servers differ from OpenAI's API; LLAMA_CPP holds what
    llama-cpp-python 0.3.36's server did (measured, docs/model-servers.md)."""

    tools_need_tool_choice: bool = False  # tools are not even shown without tool_choice
    reject_null_content: bool = False  # 500 on an assistant turn whose content is null
    single_slot: bool = False  # one request at a time; an abandoned one is still computed
    honours: Literal["both", "max_tokens"] = "both"  # which answer cap it reads
    runaway_tokens: int | None = None  # answer length when no cap it reads was sent
    seconds_per_token: float = 0.0  # generation time per answer token
    name: str = "eval-pipeline"  # owned_by in GET /models


LLAMA_CPP = ServerQuirks(
    tools_need_tool_choice=True, reject_null_content=True, single_slot=True,
    honours="max_tokens", runaway_tokens=2400, name="me",
)  # fmt: skip


def _null_content_turn(body: dict[str, Any]) -> int | None:
    """Index of an assistant message whose content is null (or missing), if any."""
    for index, message in enumerate(body.get("messages") or []):
        if message.get("role") == "assistant" and message.get("content") is None:
            return index
    return None


def _union_validation_error(index: int, message: dict[str, Any]) -> str:
    """llama-cpp-python's 500 for that turn, as its server words it: pydantic tries every
    message type of the union, so the one error that matters is the third of seven."""
    where = f"'loc': ('body', 'messages', {index}, 'ChatCompletionRequest"
    role = message.get("role")
    lines = [
        f"{{'type': 'literal_error', {where}SystemMessage', 'role'), 'msg': \"Input should be "
        f"'system'\", 'input': {role!r}, 'ctx': {{'expected': \"'system'\"}}}}",
        f"{{'type': 'literal_error', {where}UserMessage', 'role'), 'msg': \"Input should be "
        f"'user'\", 'input': {role!r}, 'ctx': {{'expected': \"'user'\"}}}}",
        f"{{'type': 'string_type', {where}AssistantMessage', 'content'), 'msg': 'Input should "
        "be a valid string', 'input': None}",
        f"{{'type': 'literal_error', {where}ToolMessage', 'role'), 'msg': \"Input should be "
        f"'tool'\", 'input': {role!r}, 'ctx': {{'expected': \"'tool'\"}}}}",
        f"{{'type': 'missing', {where}ToolMessage', 'tool_call_id'), 'msg': 'Field required', "
        f"'input': {message!r}}}",
        f"{{'type': 'literal_error', {where}FunctionMessage', 'role'), 'msg': \"Input should be "
        f"'function'\", 'input': {role!r}, 'ctx': {{'expected': \"'function'\"}}}}",
        f"{{'type': 'missing', {where}FunctionMessage', 'name'), 'msg': 'Field required', "
        f"'input': {message!r}}}",
    ]
    body = "\n".join(f"  {line}" for line in lines)
    return (
        f'7 validation errors:\n{body}\n\n  File "llama_cpp/server/app.py", line 376, '
        "in create_chat_completion\n    POST /v1/chat/completions"
    )


def _answer_cap(body: dict[str, Any], honours: str) -> int | None:
    cap = body.get("max_tokens")
    if honours == "both" and cap is None:
        cap = body.get("max_completion_tokens")
    return cap


def _bad_tool_arguments(answer: dict[str, Any]) -> Response:
    """The completion, its first tool call's arguments cut off mid-JSON (or a made-up
    tool call with such arguments, when the model called none)."""
    message = answer["choices"][0]["message"]
    calls = message.get("tool_calls") or [
        {"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": ""}}
    ]
    calls[0]["function"]["arguments"] = '{"item": "hash br'
    message["tool_calls"], answer["choices"][0]["finish_reason"] = calls, "tool_calls"
    return JSONResponse(answer)


# Answers with status 200 that are not a valid completion, as proxies and gateways send
# them: an HTML page (a captive portal, a login wall), no choices (a content filter), an
# error object (some gateways' way of failing), tool-call arguments that are not JSON.
MALFORMED: dict[str, Callable[[dict[str, Any]], Response]] = {
    "html": lambda _: HTMLResponse("<html><body><h1>Sign in to continue</h1></body></html>"),
    "no_choices": lambda answer: JSONResponse({**answer, "choices": []}),
    "error_body": lambda _: JSONResponse(
        {"error": {"message": "upstream model overloaded", "type": "server_error", "code": 503}}
    ),
    "bad_tool_args": _bad_tool_arguments,
}


def create_app(
    latency_s: float = 0.0,
    fault: FaultRule | None = None,
    rate_limit: float | None = None,
    chat_model: Callable[[str], BaseChatModel] | None = None,
    models: Sequence[str] = (OFFLINE_MODEL_NAME, "gpt-4o-mini", "gpt-4o"),
    quirks: ServerQuirks = ServerQuirks(),
) -> Starlette:
    """``chat_model(name)`` answers (default: the offline model under that name); GET
    /models lists ``models``; ``quirks`` make it behave like a real server that is not
    OpenAI (LLAMA_CPP)."""
    make_model = chat_model or (lambda name: OfflineChatModel(model_name=name))
    stats: dict[str, Any] = {"requests": 0, "faults": 0, "rate_limited": 0, "in_flight": 0,
                             "max_in_flight": 0}  # fmt: skip
    limit = SlidingWindowLimit(rate_limit) if rate_limit else None
    slot = asyncio.Lock()  # created in the server's loop on first use (Python 3.10+)

    async def chat_completions(request: Request) -> Response:
        stats["in_flight"] += 1
        stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
        try:
            return await answer(request)
        finally:
            stats["in_flight"] -= 1

    async def answer(request: Request) -> Response:
        # The answer is due latency_s after this handler takes the request up, whatever the
        # model's own work takes: a provider's latency includes its compute (see answer_at).
        due = asyncio.get_running_loop().time() + latency_s
        body = await request.json()
        stats["requests"] += 1
        by_model = stats.setdefault("by_model", {})
        by_model[body.get("model")] = by_model.get(body.get("model"), 0) + 1
        if limit and (wait := limit.retry_after()) is not None:
            stats["rate_limited"] += 1
            error = {"message": "rate limit reached", "type": "rate_limit_exceeded"}
            headers = {"retry-after": f"{wait:.3f}", "retry-after-ms": str(int(wait * 1000))}
            return JSONResponse({"error": error}, status_code=429, headers=headers)
        injected = fault(body) if fault else None
        error_text = f"injected fault {injected}"
        if isinstance(injected, tuple):
            injected, error_text = injected
        if injected is not None:
            stats["faults"] += 1
            stats[f"fault_{injected}"] = stats.get(f"fault_{injected}", 0) + 1
        if injected == "hang":
            await asyncio.sleep(HANG_S)
        if isinstance(injected, int):
            error = {"message": error_text, "type": "server_error"}
            headers = {}
            if injected == 429:
                headers = {"retry-after": str(RETRY_AFTER_S),
                           "retry-after-ms": str(int(RETRY_AFTER_S * 1000))}  # fmt: skip
            return await answer_at(due, JSONResponse({"error": error}, status_code=injected,
                                                     headers=headers))  # fmt: skip
        if quirks.reject_null_content and (turn := _null_content_turn(body)) is not None:
            stats["rejected_null_content"] = stats.get("rejected_null_content", 0) + 1
            error = {"message": _union_validation_error(turn, body["messages"][turn]),
                     "type": "internal_server_error", "param": None, "code": None}  # fmt: skip
            return JSONResponse({"error": error}, status_code=500)
        tools = body.get("tools") or []
        if quirks.tools_need_tool_choice and body.get("tool_choice") in (None, "none"):
            tools = []  # as llama.cpp's chatml-function-calling: not even in the prompt
        messages = [_convert_dict_to_message(m) for m in body.get("messages", [])]
        model = make_model(body.get("model", "offline"))
        kwargs: dict[str, Any] = {"tools": tools}
        for key in ("temperature", "seed"):
            if body.get(key) is not None:
                kwargs[key] = body[key]
        result = await model._agenerate(messages, **kwargs)
        message = result.generations[0].message
        usage = dict(message.usage_metadata or {})
        cap = _answer_cap(body, quirks.honours)
        if quirks.runaway_tokens and cap is None:
            usage["output_tokens"] = quirks.runaway_tokens
        elif cap is not None:
            usage["output_tokens"] = min(usage.get("output_tokens", 0), cap)
        usage["total_tokens"] = usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
        generation_s = usage["output_tokens"] * quirks.seconds_per_token
        due += generation_s
        answer = JSONResponse(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "offline"),
                "choices": [
                    {
                        "index": 0,
                        "message": _convert_message_to_dict(message),
                        "finish_reason": "tool_calls" if message.tool_calls else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": usage.get("input_tokens", 0),
                    "completion_tokens": usage.get("output_tokens", 0),
                    "total_tokens": usage.get("total_tokens", 0),
                },
            }
        )
        if injected == "reset":
            return await answer_at(due, _reset_midway(answer.body))
        if injected in MALFORMED:  # a 200 that is not a completion (a proxy, a gateway)
            return await answer_at(due, MALFORMED[injected](json.loads(answer.body)))
        if quirks.single_slot:  # computed to the end even if the client has gone
            async with slot:
                await asyncio.sleep(latency_s + generation_s)
                stats["computed"] = stats.get("computed", 0) + 1
            return answer
        return await answer_at(due, answer)

    async def embeddings(request: Request) -> JSONResponse:
        body = await request.json()
        stats["embeddings"] = stats.get("embeddings", 0) + 1
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        dims = int(body.get("dimensions") or 1536)
        data = [{"object": "embedding", "index": i, "embedding": word_vector(str(t), dims)}
                for i, t in enumerate(texts)]  # fmt: skip
        used = sum(len(str(t).split()) for t in texts)
        return JSONResponse({"object": "list", "data": data, "model": body.get("model"),
                             "usage": {"prompt_tokens": used, "total_tokens": used}})  # fmt: skip

    async def stats_view(request: Request) -> JSONResponse:
        return JSONResponse(stats)

    async def list_models(request: Request) -> JSONResponse:
        if quirks.single_slot:  # llama.cpp's listing waits for the model's lock too
            async with slot:
                pass
        names = sorted(set(models))
        data = [{"id": n, "object": "model", "created": 0, "owned_by": quirks.name}
                for n in names]  # fmt: skip
        return JSONResponse({"object": "list", "data": data})

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/models", list_models),
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/stats", stats_view),
        ]
    )
    app.state.stats = stats
    return app


def word_vector(text: str, dims: int) -> list[float]:
    """A unit vector with a weight in one dimension per word (by a stable hash)."""
    import hashlib

    vector = [0.0] * dims
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dims] += 1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [round(v / norm, 6) for v in vector]


class BackgroundServer:
    """Serve an ASGI app with uvicorn on HOST in a daemon thread (tests, benchmarks)."""

    def __init__(self, app: Starlette, port: int | None = None):
        self.app = app
        self.port = port or _free_port()
        config = uvicorn.Config(app, host=HOST, port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"the local server on port {self.port} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class LocalOpenAIServer(BackgroundServer):
    """The offline model over HTTP: ``with LocalOpenAIServer() as s: … s.base_url``."""

    def __init__(
        self,
        latency_s: float = 0.0,
        port: int | None = None,
        fault: FaultRule | None = None,
        rate_limit: float | None = None,
        chat_model: Callable[[str], BaseChatModel] | None = None,
        models: Sequence[str] = (OFFLINE_MODEL_NAME, "gpt-4o-mini", "gpt-4o"),
        quirks: ServerQuirks = ServerQuirks(),
    ):
        super().__init__(create_app(latency_s, fault, rate_limit, chat_model, models, quirks), port)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def requests(self) -> int:
        return self.app.state.stats["requests"]

    def __enter__(self) -> LocalOpenAIServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m eval_pipeline_tests.model_server --port 8099 --latency-ms 200`` (benchmarks
    run the server in its own process so its CPU time is not counted as the client's)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--rate-limit", type=float, default=None, help="requests per second")
    args = parser.parse_args(argv)
    app = create_app(args.latency_ms / 1000, rate_limit=args.rate_limit)
    uvicorn.run(app, host=HOST, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
