"""Where a run's project, services, model settings and results store come from.

The CLI and ``evaluate()`` read them from the process environment (``from_env``); Dagster
from its resources (defs/resources.py builds the same ``Environment``). Everything after
that is the same code (service/run.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

from eval_pipeline import settings
from eval_pipeline.agents.project import Project, load_project
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.integrations.services import Services
from eval_pipeline.llm.model_settings import LLMSettings


@dataclass(frozen=True)
class Environment:
    """A driver's view of the world: the project file, Langfuse or local services, the
    agents' model settings (before a prompt's config and the recording mode), the results
    store's URL and the price table."""

    project: Project
    services: Services
    llm: LLMSettings
    store_url: str
    prices_file: Path | None = None

    @classmethod
    def from_env(cls, project: str | Path | None = None) -> Environment:
        """From the environment: the project file found from here (or ``project``), the
        LANGFUSE_* and EVAL_LLM_* variables, EVAL_RESULTS_URL and EVAL_PRICES_FILE."""
        loaded = load_project(project)
        return cls(loaded, Services.from_env(loaded.prompts_dir), LLMSettings.from_env(),
                   settings.results_url(), settings.prices_file())  # fmt: skip

    def store(self) -> ResultsStore:
        return open_store(self.store_url)

    @cached_property
    def prices(self) -> PriceTable:
        """The price table, its file read once for this environment (every stage of a
        run prices with it)."""
        return PriceTable.from_file(self.prices_file)


@cache
def open_store(url: str) -> ResultsStore:
    """One store (and connection pool) per URL and process."""
    return ResultsStore(url)
