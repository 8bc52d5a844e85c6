"""Chat completions without the OpenAI SDK's request transform.

``AsyncCompletions.create`` walks every request body through a typed transform (field
aliases, date and base64 formats, pydantic models) before sending it. For an agent's
messages and tool schemas that walk costs 1.1-1.8 ms of CPU per call, about a quarter of
the client's CPU per model call, and with many calls in flight on one event loop that CPU
is what caps throughput. ChatOpenAI hands over a payload that is already plain JSON, and
the chat-completion request types declare no aliases or formats, so the transform changes
nothing: we post the payload as it is. Streaming, structured output (``response_format``)
and anything that is not plain JSON keep the SDK's own path. A test compares every request
on the wire (URL, headers, JSON body) with the SDK's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openai import AsyncStream, NotGiven, Omit, not_given
from openai._base_client import make_request_options
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletion, ChatCompletionChunk

_JSON_SCALARS = (str, int, float, bool, type(None))
_EXACT_SCALARS = frozenset(_JSON_SCALARS)  # the leaves, told apart without a call


def is_plain_json(value: Any) -> bool:
    """True for dicts with string keys, lists and JSON scalars all the way down.

    It walks every request body (~110 values for the drive-thru agent's tools and
    messages), so: plain loops, leaves of the exact scalar types checked inline, no
    generator per level (BENCHMARKS.md, 2026-11-27)."""
    if isinstance(value, _JSON_SCALARS):
        return True
    items: Iterable[Any]
    if isinstance(value, list):
        items = value
    elif isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                return False
        items = value.values()
    else:
        return False
    for item in items:  # noqa: SIM110  (a loop, not all(): no generator per level)
        if type(item) not in _EXACT_SCALARS and not is_plain_json(item):
            return False
    return True


class PlainJSONCompletions(AsyncCompletions):
    """``chat.completions`` whose non-streaming ``create`` sends a plain-JSON body as is."""

    async def create(  # type: ignore[override]
        self,
        *,
        extra_headers: Any = None,
        extra_query: Any = None,
        extra_body: Any = None,
        timeout: Any = not_given,
        **params: Any,
    ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]:
        body = {k: v for k, v in params.items() if not isinstance(v, NotGiven | Omit)}
        if body.get("stream") or "response_format" in body or not is_plain_json(body):
            return await super().create(
                extra_headers=extra_headers,
                extra_query=extra_query,
                extra_body=extra_body,
                timeout=timeout,
                **params,
            )
        options = make_request_options(
            extra_headers=extra_headers,
            extra_query=extra_query,
            extra_body=extra_body,
            timeout=timeout,
            security={"bearer_auth": True},
        )
        return await self._post(
            "/chat/completions",
            body=body,
            options=options,
            cast_to=ChatCompletion,
            stream=False,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )
