"""Dagster resources: thin, configurable wrappers that build the plain objects in core/."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import TypeVar

from dagster import ConfigurableResource, EnvVar

from eval_pipeline import settings
from eval_pipeline.agents.project import Project, load_project
from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.integrations.langfuse_client import (
    ENVIRONMENT_VAR,
    LangfuseSettings,
    base_url_var,
)
from eval_pipeline.integrations.prompt_registry import PromptRegistry
from eval_pipeline.integrations.services import Services
from eval_pipeline.llm.model_settings import LLMSettings, sdk_key
from eval_pipeline.service import Environment
from eval_pipeline.service.environment import open_store


class ResultsStoreResource(ConfigurableResource):
    """The results store: SQLite under EVAL_HOME by default, Postgres via EVAL_RESULTS_URL."""

    url: str

    def open(self) -> ResultsStore:
        return open_store(self.url)


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
    environment: str | None = None  # where evaluation traces go (default sdk-experiment)

    def settings(self) -> LangfuseSettings | None:
        return LangfuseSettings.from_values(self.public_key, self.secret_key, self.base_url,
                                            self.environment)  # fmt: skip

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

    def suite(self, name: str) -> Suite:
        """The suite with its case source (a ``dataset: langfuse:…`` suite reads its items
        from Langfuse): integrations/services.py ``Services.suite``."""
        return self.get().suite(self.suites.get(name))

    def registry(self) -> PromptRegistry:
        return self.get().registry()


class LLMResource(ConfigurableResource):
    """The agents' chat model (the EVAL_LLM_* settings, docs/configuration.md). Without
    base_url and api_key: the offline model."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    temperature: float | None = None  # None: the prompt's config.temperature
    timeout_s: float | None = None  # one request; None: derived from the item timeout
    max_retries: int | None = None  # per model call (default 2)
    max_tokens: int | None = None
    max_tokens_field: str | None = None  # (checked as EVAL_LLM_MAX_TOKENS_FIELD is)
    tool_choice: str | None = None
    tool_turn_content: str | None = None
    compat: str | None = None  # llama.cpp, vllm, ollama, openai
    prices_file: str | None = None

    def settings(self) -> LLMSettings:
        """These settings with the server kind's presets (``compat``), as the CLI's are made
        from the environment (llm/model_settings.py ``LLMSettings.configured``)."""
        return LLMSettings.configured(
            model=self.model, base_url=self.base_url, api_key=self.api_key, compat=self.compat,
            temperature=self.temperature, timeout_s=self.timeout_s,
            max_retries=self.max_retries, max_tokens=self.max_tokens,
            max_tokens_field=self.max_tokens_field, tool_choice=self.tool_choice,
            tool_turn_content=self.tool_turn_content,
        )  # fmt: skip

    def prices(self) -> PriceTable:
        return PriceTable.from_file(Path(self.prices_file) if self.prices_file else None)


def environment(services: ServicesResource, llm: LLMResource,
                results_store: ResultsStoreResource) -> Environment:  # fmt: skip
    """The run service's environment from this code location's resources."""
    prices = Path(llm.prices_file) if llm.prices_file else None
    return Environment(services.suites.project_file(), services.get(), llm.settings(),
                       results_store.url, prices)  # fmt: skip


def _env(name: str) -> EnvVar | None:
    """An EnvVar when the variable is set, so optional settings load without warnings."""
    return EnvVar(name) if os.environ.get(name) else None


Number = TypeVar("Number", int, float)


def _number_env(name: str, kind: type[Number]) -> Number | None:
    """A number read when the code location loads (a bad one fails the load, naming it)."""
    value = os.environ.get(name)
    if not value:
        return None
    try:
        return kind(value)
    except ValueError:
        raise ConfigurationError(f"{name}={value!r}: expected a {kind.__name__}") from None


def default_resources(project: Path) -> dict[str, ConfigurableResource]:
    langfuse = LangfuseResource(
        public_key=_env("LANGFUSE_PUBLIC_KEY"),
        secret_key=_env("LANGFUSE_SECRET_KEY"),
        base_url=_env(base_url_var()),
        environment=_env(ENVIRONMENT_VAR),
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
            api_key=_env("EVAL_LLM_API_KEY") or sdk_key(_env("OPENAI_API_KEY")),
            temperature=_number_env("EVAL_LLM_TEMPERATURE", float),
            timeout_s=_number_env("EVAL_LLM_TIMEOUT_S", float),
            max_retries=_number_env("EVAL_LLM_MAX_RETRIES", int),
            max_tokens=_number_env("EVAL_LLM_MAX_TOKENS", int),
            max_tokens_field=_env("EVAL_LLM_MAX_TOKENS_FIELD"),
            tool_choice=_env("EVAL_LLM_TOOL_CHOICE"),
            tool_turn_content=_env("EVAL_LLM_TOOL_TURN_CONTENT"),
            compat=_env("EVAL_LLM_COMPAT"),
            prices_file=_env("EVAL_PRICES_FILE"),
        ),
    }
