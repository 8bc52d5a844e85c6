"""Build the chat model for a run: ChatOpenAI for any OpenAI-compatible endpoint, else offline.

Every model built here takes the running item's seed (``current_item``) when the caller
passes none, so a user's graph that never heard of seeds still gets one per item and
attempt. A failing model call is retried here, by the client, ``max_retries`` times with
backoff (Retry-After honoured); the runner does not retry it again (core/running/retry.py).
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from eval_pipeline.core.running.agent import current_item
from eval_pipeline.llm import usage  # noqa: F401  (registers the token counter)
from eval_pipeline.llm.offline import OfflineChatModel
from eval_pipeline.llm.provider_stats import PROVIDER_STATS
from eval_pipeline.llm.settings import LLMSettings


def create_chat_model(settings: LLMSettings) -> BaseChatModel:
    if settings.provider == "offline":
        return OfflineChatModel(temperature=settings.temperature or 0.0, seed=settings.seed)
    import openai

    from eval_pipeline.llm.plain_json import PlainJSONCompletions

    model = _seeded_chat_openai()(
        # Our own pool per model object, not langchain-openai's process-wide cached client:
        # that one is bound to the event loop of its first use, and every evaluation run
        # runs in an event loop of its own ("Event loop is closed" on the second run).
        http_async_client=openai.DefaultAsyncHttpxClient(
            timeout=settings.timeout_s, event_hooks=PROVIDER_STATS.hooks(), **_transport(settings)
        ),
        model=settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key or "no-key-configured",
        temperature=settings.temperature,
        timeout=settings.timeout_s,
        max_retries=settings.max_retries,
        stream_usage=True,
    )
    model.async_client = PlainJSONCompletions(model.root_async_client)
    return model


def _transport(settings: LLMSettings) -> dict[str, Any]:
    """The HTTP transport when calls are recorded or replayed (else httpx's default)."""
    if settings.recording == "off":
        return {}
    import openai

    from eval_pipeline.llm.recording import Recordings, RecordingTransport, httpx

    if settings.recordings_path is None:
        raise ValueError(f"recording mode {settings.recording!r} needs a recordings file")
    network = httpx.AsyncHTTPTransport(limits=openai.DEFAULT_CONNECTION_LIMITS)
    recordings = Recordings.open(settings.recordings_path)
    return {"transport": RecordingTransport(recordings, settings.recording, network)}


_SEEDED: type | None = None


def _seeded_chat_openai() -> type:
    """ChatOpenAI that sends the running item's seed (defined lazily: the offline path
    never imports langchain-openai)."""
    global _SEEDED
    if _SEEDED is None:
        from langchain_openai import ChatOpenAI

        class SeededChatOpenAI(ChatOpenAI):
            def _get_request_payload(self, input_: Any, *, stop: Any = None, **kwargs: Any):
                payload = super()._get_request_payload(input_, stop=stop, **kwargs)
                scope = current_item.get()
                if scope is not None and payload.get("seed") is None:
                    payload["seed"] = scope.seed
                return payload

        _SEEDED = SeededChatOpenAI
    return _SEEDED
