"""``ctx``: what an agent factory or an agent callable is handed.

A factory (``build(ctx) -> compiled graph``) is called when the run starts and again for
each item, with the run's ``ctx``; a callable (``fn(input, ctx) -> dict``) once per item,
with the item's fields filled in. The run's chat model is built once, lazily, and shared by
every item (it holds the HTTP pool; it keeps no state of an item's).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from eval_pipeline.core.prompts.labels import PromptError, PromptVersion
from eval_pipeline.core.running.agent import current_item
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.model_settings import LLMSettings


@dataclass
class _RunShared:
    """Per run: the model, built on first use, and whether the agent read the prompt."""

    model: BaseChatModel | None = None
    prompt_read: bool = False


@dataclass(frozen=True)
class AgentContext:
    suite: str
    dataset_dir: Path  # the suite's dataset directory (data files the agent reads live here)
    settings: LLMSettings  # the model settings with the prompt's config applied
    prompt_version: PromptVersion | None
    case: GoldenCase | None = None  # per item (callables): the case being run
    repeat: int = 0
    callbacks: tuple[Any, ...] = ()  # LangChain callbacks to attach (tracing)
    _shared: _RunShared = field(default_factory=_RunShared, repr=False, compare=False)

    @property
    def prompt(self) -> PromptVersion:
        """The prompt version under test (its text and config)."""
        if self.prompt_version is None:
            raise PromptError(f"suite {self.suite} declares no prompt (set `prompt:` for it)")
        self._shared.prompt_read = True
        return self.prompt_version

    def system_prompt(self, **variables: Any) -> str:
        """The prompt's system text with ``{{variables}}`` filled in."""
        return self.prompt.compile(**variables)

    @property
    def model(self) -> BaseChatModel:
        """A chat model for the configured endpoint (or the offline model), with the
        prompt's config (model, temperature) applied; one per run."""
        if self._shared.model is None:
            self._shared.model = create_chat_model(self.settings)
        return self._shared.model

    @property
    def seed(self) -> int:
        """The running item's seed (per attempt), else the configured base seed."""
        scope = current_item.get()
        return scope.seed if scope is not None else self.settings.seed

    @property
    def prompt_read(self) -> bool:
        return self._shared.prompt_read

    def for_item(self, case: GoldenCase, repeat: int, callbacks: tuple[Any, ...]) -> AgentContext:
        return replace(self, case=case, repeat=repeat, callbacks=callbacks)


class ContextAgent:
    """Base of the adapters that hand ``ctx`` to the team's code (graph, callable)."""

    def __init__(self, ctx: AgentContext):
        self.ctx = ctx

    @property
    def prompt_read(self) -> bool:
        """Whether the agent read the prompt under test (else labels make no difference)."""
        return self.ctx.prompt_read
