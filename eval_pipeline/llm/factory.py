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
from eval_pipeline.llm.model_settings import LLMSettings
from eval_pipeline.llm.offline import OfflineChatModel
from eval_pipeline.llm.provider_stats import PROVIDER_STATS

DEFAULT_REQUEST_TIMEOUT_S = 60.0  # a model built outside a run (a judge, doctor's probe)


def create_chat_model(settings: LLMSettings) -> BaseChatModel:
    if settings.provider == "offline":
        return OfflineChatModel(temperature=settings.temperature or 0.0, seed=settings.seed)

    from eval_pipeline.llm.plain_json import PlainJSONCompletions

    timeout = settings.timeout_s or DEFAULT_REQUEST_TIMEOUT_S
    model = _eval_chat_openai()(
        # Our own pool per model object, not langchain-openai's process-wide cached client:
        # that one is bound to the event loop of its first use, and every evaluation run
        # runs in an event loop of its own ("Event loop is closed" on the second run).
        http_async_client=_http_client(settings, timeout),
        model=settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key or "no-key-configured",
        temperature=settings.temperature,
        timeout=timeout,
        max_retries=settings.max_retries,
        max_tokens=settings.max_tokens,
        stream_usage=True,
        eval_tool_choice=settings.tool_choice,
        eval_max_tokens_field=settings.max_tokens_field,
        eval_tool_turn_content=settings.tool_turn_content,
    )
    model.async_client = PlainJSONCompletions(model.root_async_client)
    return model


def _http_client(settings: LLMSettings, timeout: float) -> Any:
    import openai

    client = openai.DefaultAsyncHttpxClient(timeout=timeout, event_hooks=PROVIDER_STATS.hooks())
    _keep_sockets(getattr(client, "_transport", None))  # env proxies keep their own pools
    return client


def _keep_sockets(transport: Any) -> None:
    """A cheaper idle-connection probe (llm/transport.py), with the OpenAI SDK on httpx2."""
    try:
        from eval_pipeline.llm.transport import keep_sockets
    except ImportError:  # an OpenAI SDK before 3 (on httpx): left as it is
        return
    keep_sockets(transport)


_EVAL_CHAT_OPENAI: type | None = None


def _eval_chat_openai() -> type:
    """ChatOpenAI that sends the running item's seed and the server's quirks (defined
    lazily: the offline path never imports langchain-openai)."""
    global _EVAL_CHAT_OPENAI
    if _EVAL_CHAT_OPENAI is None:
        from langchain_openai import ChatOpenAI

        class EvalChatOpenAI(ChatOpenAI):
            eval_tool_choice: str | None = None
            eval_max_tokens_field: str = "max_completion_tokens"
            eval_tool_turn_content: str = "null"

            def _get_request_payload(self, input_: Any, *, stop: Any = None, **kwargs: Any):
                payload = super()._get_request_payload(input_, stop=stop, **kwargs)
                scope = current_item.get()
                if scope is not None and payload.get("seed") is None:
                    payload["seed"] = scope.seed
                return adapt_payload(payload, self.eval_tool_choice, self.eval_max_tokens_field,
                                     self.eval_tool_turn_content)  # fmt: skip

        _EVAL_CHAT_OPENAI = EvalChatOpenAI
    return _EVAL_CHAT_OPENAI


def adapt_payload(
    payload: dict[str, Any], tool_choice: str | None, max_tokens_field: str, tool_turn: str
) -> dict[str, Any]:
    """A chat-completions body as this server needs it: ``tool_choice`` with the tools,
    the answer cap under the name it honours, "" instead of null next to tool calls."""
    if tool_choice and payload.get("tools") and "tool_choice" not in payload:
        payload["tool_choice"] = tool_choice
    if max_tokens_field == "max_tokens" and "max_completion_tokens" in payload:
        payload["max_tokens"] = payload.pop("max_completion_tokens")
    if tool_turn == "empty":
        for message in payload.get("messages") or []:
            if message.get("role") == "assistant" and message.get("content") is None:
                message["content"] = ""
    return payload


def pinned_chat_model(
    settings: LLMSettings, model: str | None, temperature: float = 0.0
) -> BaseChatModel:
    """A chat model on ``settings``' endpoint at a fixed temperature, on ``model`` when given
    (judges and the simulated customer: their answers must not drift between runs)."""
    pinned: dict[str, Any] = {"temperature": temperature}
    if model:
        pinned["model"] = str(model)
    return create_chat_model(settings.model_copy(update=pinned))
