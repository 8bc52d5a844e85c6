"""Dagster resources: thin, configurable wrappers that build the plain objects in core/."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from dagster import ConfigurableResource, EnvVar

from eval_pipeline import settings
from eval_pipeline.agents.project import Project, load_project
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suite import Suite
from eval_pipeline.integrations.langfuse_client import LangfuseSettings
from eval_pipeline.integrations.prompt_registry import PromptRegistry
from eval_pipeline.integrations.services import Services
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
    """The project file that declares the suites (reloaded when it changes)."""

    project: str

    def project_file(self) -> Project:
        path = Path(self.project)
        return _load(path.resolve(), path.stat().st_mtime_ns)

    def get(self, name: str) -> Suite:
        return self.project_file().suite(name)


@cache
def _load(path: Path, mtime_ns: int) -> Project:
    return load_project(path)


class LangfuseResource(ConfigurableResource):
    """Langfuse keys and host (LANGFUSE_* via EnvVar). Without keys: local implementations."""

    public_key: str | None = None
    secret_key: str | None = None
    base_url: str | None = None

    def settings(self) -> LangfuseSettings | None:
        return LangfuseSettings.from_values(self.public_key, self.secret_key, self.base_url)

    def services(self, prompts_dir: Path) -> Services:
        return Services(self.settings(), prompts_dir)

    def describe(self) -> str:
        return self.services(Path()).description


class ServicesResource(ConfigurableResource):
    """Langfuse (prompts, traces, tracing, score write-back) when configured, else the
    project's prompts/ files and local traces: see integrations/services.py."""

    suites: SuitesResource
    langfuse: LangfuseResource

    def get(self) -> Services:
        return self.langfuse.services(self.suites.project_file().prompts_dir)

    def registry(self) -> PromptRegistry:
        return self.get().registry()


class LLMResource(ConfigurableResource):
    """The agents' chat model. Without base_url and api_key: the offline model."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    temperature: float | None = None  # None: the prompt's config.temperature
    timeout_s: float = 60.0  # one request
    max_retries: int = 2  # per model call
    prices_file: str | None = None

    def settings(self) -> LLMSettings:
        configured = bool(self.base_url or self.api_key)
        return LLMSettings.create(
            model=self.model or ("gpt-4o-mini" if configured else "offline"),
            base_url=self.base_url,
            api_key=self.api_key,
            temperature=self.temperature,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
        )

    def prices(self) -> PriceTable:
        return PriceTable.from_file(Path(self.prices_file) if self.prices_file else None)


def _env(name: str) -> EnvVar | None:
    """An EnvVar when the variable is set, so optional settings load without warnings."""
    return EnvVar(name) if os.environ.get(name) else None


def _float_env(name: str) -> float | None:
    value = os.environ.get(name)
    return float(value) if value else None


def default_resources(project: Path) -> dict[str, ConfigurableResource]:
    langfuse = LangfuseResource(
        public_key=_env("LANGFUSE_PUBLIC_KEY"),
        secret_key=_env("LANGFUSE_SECRET_KEY"),
        base_url=_env("LANGFUSE_BASE_URL"),
    )
    suites = SuitesResource(project=str(project))
    return {
        "results_store": ResultsStoreResource(
            url=_env("EVAL_RESULTS_URL") or settings.results_url()
        ),
        "suites": suites,
        "langfuse": langfuse,
        "services": ServicesResource(suites=suites, langfuse=langfuse),
        "llm": LLMResource(
            model=_env("EVAL_LLM_MODEL"),
            base_url=_env("EVAL_LLM_BASE_URL"),
            api_key=_env("EVAL_LLM_API_KEY") or _env("OPENAI_API_KEY"),
            temperature=_float_env("EVAL_LLM_TEMPERATURE"),
            prices_file=_env("EVAL_PRICES_FILE"),
        ),
    }
