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
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry
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


class PromptRegistryResource(ConfigurableResource):
    """The local, file-backed prompt registry (Langfuse arrives with its own resource)."""

    prompts_dir: str

    def registry(self) -> LocalPromptRegistry:
        return LocalPromptRegistry(Path(self.prompts_dir))


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


def _env(name: str) -> EnvVar | None:
    """An EnvVar when the variable is set, so optional settings load without warnings."""
    return EnvVar(name) if os.environ.get(name) else None


def default_resources() -> dict[str, ConfigurableResource]:
    return {
        "results_store": ResultsStoreResource(
            url=_env("EVAL_RESULTS_URL") or settings.results_url()
        ),
        "suites": SuitesResource(datasets_dir=str(settings.datasets_dir())),
        "prompt_registry": PromptRegistryResource(prompts_dir=str(settings.prompts_dir())),
        "llm": LLMResource(
            model=_env("EVAL_LLM_MODEL"),
            base_url=_env("EVAL_LLM_BASE_URL"),
            api_key=_env("EVAL_LLM_API_KEY") or _env("OPENAI_API_KEY"),
            prices_file=_env("EVAL_PRICES_FILE"),
        ),
    }
