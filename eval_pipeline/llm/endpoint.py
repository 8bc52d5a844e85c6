"""Before a run: does the endpoint serve the model we are about to call thousands of times?

A prompt's config can name any model; a typo would otherwise surface as one permanent
error per item, after the run has been written. One ``GET /models`` settles it first.
"""

from __future__ import annotations

from typing import Any

from eval_pipeline.core.errors import ServiceError
from eval_pipeline.core.prompts.labels import PromptVersion
from eval_pipeline.core.util.redact import redact
from eval_pipeline.llm.model_settings import LLMSettings, check_timeout_s, checks_model

NO_LISTING = {404, 405, 501}  # endpoints (some proxies) that do not implement /models


class ModelUnavailable(ServiceError):
    """The configured model cannot be used; the message says where it came from and what
    to change."""


def endpoint_name(settings: LLMSettings) -> str:
    return settings.base_url or "api.openai.com"


def client(settings: LLMSettings, timeout_s: float) -> Any:
    """A plain OpenAI client for checks (one try, ``timeout_s``)."""
    import openai  # not at module level: the offline path never needs it (~0.5 s to import)

    key = settings.api_key.get_secret_value() if settings.api_key else "no-key-configured"
    return openai.OpenAI(base_url=settings.base_url, api_key=key, timeout=timeout_s,
                         max_retries=0)  # fmt: skip


def available_models(settings: LLMSettings) -> list[str] | None:
    """The endpoint's model ids, or None when it does not list models. Connection and
    authentication errors propagate."""
    import openai

    try:
        return [model.id for model in client(settings, check_timeout_s()).models.list()]
    except openai.APIStatusError as exc:
        if exc.status_code in NO_LISTING:
            return None
        raise


def busy(exc: BaseException) -> str | None:
    """For a timed-out check: what it means and what to do; None for other errors."""
    import openai

    if not isinstance(exc, openai.APITimeoutError):
        return None
    return (f"no answer within {check_timeout_s():g} s: the server is busy (a single-slot "
            "server such as llama.cpp answers after the request it is computing) or slow; "
            "wait, or raise EVAL_LLM_CHECK_TIMEOUT_S")  # fmt: skip


def require_model(settings: LLMSettings, source: str) -> None:
    """Raise ModelUnavailable unless the endpoint serves ``settings.model`` (the offline
    model, and endpoints that do not list models, always pass). ``source`` names where the
    model was chosen, e.g. "prompt drive-thru/orchestrator v3 (config.model)".
    EVAL_LLM_CHECK_MODEL=0 turns the check off, for endpoints whose listing does not name
    what they serve (some gateways route names they do not list)."""
    if settings.provider == "offline" or not checks_model():
        return
    import openai

    endpoint = endpoint_name(settings)
    try:
        models = available_models(settings)
    except openai.OpenAIError as exc:
        why = busy(exc) or (f"{type(exc).__name__}: {exc}. Check EVAL_LLM_BASE_URL and "
                            "EVAL_LLM_API_KEY (eval-pipeline doctor)")  # fmt: skip
        raise ModelUnavailable(redact(f"cannot list the models of {endpoint}: {why}")) from exc
    if models is not None and settings.model not in models:
        listed = ", ".join(sorted(models)[:10]) + (", …" if len(models) > 10 else "")
        raise ModelUnavailable(
            f"{source} asks for model {settings.model!r}, which {endpoint} does not serve "
            f"(it lists {len(models)}: {listed}). Set the prompt's config.model or "
            "EVAL_LLM_MODEL to one of them."
        )


def model_source(prompt: PromptVersion | None) -> str:
    """Where a run's model was chosen, for the error message."""
    if prompt is not None and prompt.config.get("model"):
        return f"prompt {prompt.name} v{prompt.version} (config.model)"
    return "the configured model (EVAL_LLM_MODEL, default gpt-4o-mini)"
