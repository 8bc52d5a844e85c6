"""Dagster resources: thin, configurable wrappers that build the plain objects in core/."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from dagster import ConfigurableResource, EnvVar

from eval_pipeline import settings
from eval_pipeline.agents.registry import get_suite
from eval_pipeline.core.pricing import PriceTable
from eval_pipeline.core.results_store import ResultsStore
from eval_pipeline.core.suite import Suite
from eval_pipeline.integrations.langfuse_client import LangfuseSettings
from eval_pipeline.integrations.langfuse_prompts import LangfusePromptRegistry
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry, PromptRegistry
from eval_pipeline.integrations.trace_sources import (
    LangfuseTraceSource,
    LocalTraceSource,
    TraceSource,
)
from eval_pipeline.llm.settings import LLMSettings


class ResultsStoreResource(ConfigurableResource):
    """The results store: SQLite under EVAL_HOME by default, Postgres via EVAL_RESULTS_URL."""

    url: str

    def open(self) -> ResultsStore:
        return _open_store(self.url)


@cache
def _open_store(url: str) -> ResultsStore:
    """One store (and connection pool) per URL and process."""
    return ResultsStore(url)


class SuitesResource(ConfigurableResource):
    """Where the golden datasets and thresholds live."""

    datasets_dir: str

    def get(self, name: str) -> Suite:
        return get_suite(name, Path(self.datasets_dir))


class LangfuseResource(ConfigurableResource):
    """Langfuse keys and host (LANGFUSE_* via EnvVar). Without keys: local implementations."""

    public_key: str | None = None
    secret_key: str | None = None
    base_url: str | None = None

    def settings(self) -> LangfuseSettings | None:
        return LangfuseSettings.from_values(self.public_key, self.secret_key, self.base_url)

    def describe(self) -> str:
        settings = self.settings()
        return f"langfuse ({settings.base_url})" if settings else "not configured (local files)"

    def client(self):
        """The SDK client, or None when Langfuse is not configured."""
        settings = self.settings()
        return _langfuse_client(settings) if settings else None


class PromptRegistryResource(ConfigurableResource):
    """Langfuse's prompt management when configured, else the file-backed registry."""

    prompts_dir: str
    langfuse: LangfuseResource | None = None

    def registry(self) -> PromptRegistry:
        settings = self.langfuse.settings() if self.langfuse else None
        if settings is None:
            return LocalPromptRegistry(Path(self.prompts_dir))
        return LangfusePromptRegistry(
            self.langfuse.client(), base_url=settings.base_url, timeout_s=settings.timeout_s
        )


@cache
def _langfuse_client(settings: LangfuseSettings):
    """One SDK client per settings and process (the SDK shares resources per key anyway)."""
    return settings.client()


class LLMResource(ConfigurableResource):
    """The agents' chat model. Without base_url and api_key: the offline model."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    timeout_s: float = 60.0
    prices_file: str | None = None

    def settings(self) -> LLMSettings:
        configured = bool(self.base_url or self.api_key)
        return LLMSettings.create(
            model=self.model or ("gpt-4o-mini" if configured else "offline"),
            base_url=self.base_url,
            api_key=self.api_key,
            temperature=self.temperature,
            timeout_s=self.timeout_s,
        )

    def prices(self) -> PriceTable:
        return PriceTable.from_file(Path(self.prices_file) if self.prices_file else None)


PAGE_TIMEOUT_S = 30  # one page of 1,000 observations


class TraceSourceResource(ConfigurableResource):
    """Production traces: Langfuse's observations API when configured, else local JSONL."""

    datasets_dir: str
    langfuse: LangfuseResource | None = None

    def source(self) -> TraceSource:
        settings = self.langfuse.settings() if self.langfuse else None
        if settings is None:
            return LocalTraceSource(Path(self.datasets_dir))
        return LangfuseTraceSource(
            self.langfuse.client(), base_url=settings.base_url, timeout_s=PAGE_TIMEOUT_S
        )


def _env(name: str) -> EnvVar | None:
    """An EnvVar when the variable is set, so optional settings load without warnings."""
    return EnvVar(name) if os.environ.get(name) else None


def default_resources() -> dict[str, ConfigurableResource]:
    langfuse = LangfuseResource(
        public_key=_env("LANGFUSE_PUBLIC_KEY"),
        secret_key=_env("LANGFUSE_SECRET_KEY"),
        base_url=_env("LANGFUSE_BASE_URL"),
    )
    return {
        "results_store": ResultsStoreResource(
            url=_env("EVAL_RESULTS_URL") or settings.results_url()
        ),
        "suites": SuitesResource(datasets_dir=str(settings.datasets_dir())),
        "langfuse": langfuse,
        "prompt_registry": PromptRegistryResource(
            prompts_dir=str(settings.prompts_dir()), langfuse=langfuse
        ),
        "trace_source": TraceSourceResource(
            datasets_dir=str(settings.datasets_dir()), langfuse=langfuse
        ),
        "llm": LLMResource(
            model=_env("EVAL_LLM_MODEL"),
            base_url=_env("EVAL_LLM_BASE_URL"),
            api_key=_env("EVAL_LLM_API_KEY") or _env("OPENAI_API_KEY"),
            prices_file=_env("EVAL_PRICES_FILE"),
        ),
    }
