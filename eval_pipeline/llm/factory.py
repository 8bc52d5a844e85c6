"""Build the chat model for a run: ChatOpenAI for any OpenAI-compatible endpoint, else offline."""

from __future__ import annotations

from langchain_core.language_models.chat_models import BaseChatModel

from eval_pipeline.llm.offline import OfflineChatModel
from eval_pipeline.llm.provider_stats import PROVIDER_STATS
from eval_pipeline.llm.settings import LLMSettings


def create_chat_model(settings: LLMSettings) -> BaseChatModel:
    if settings.provider == "offline":
        return OfflineChatModel(temperature=settings.temperature, seed=settings.seed)
    import openai
    from langchain_openai import ChatOpenAI

    from eval_pipeline.llm.plain_json import PlainJSONCompletions

    model = ChatOpenAI(
        # Our own pool per model object, not langchain-openai's process-wide cached client:
        # that one is bound to the event loop of its first use, and every evaluation run
        # runs in an event loop of its own ("Event loop is closed" on the second run).
        http_async_client=openai.DefaultAsyncHttpxClient(
            timeout=settings.timeout_s, event_hooks=PROVIDER_STATS.hooks()
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
