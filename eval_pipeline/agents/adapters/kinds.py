"""The kinds of agent a suite's ``agent:`` may name, each one class (``AgentKind``),
registered where it is defined (``@register``).

``agent:`` is a discriminated union: a mapping with exactly one kind's key (``graph:``,
``callable:``, ``http:``, …), validated by that kind's ``Config``; or the short form, an
import path, which the project loader resolves to ``graph`` or ``callable`` by what it
imports. A kind checks its config when the project loads (``describe``: problems are
reported in the project file's words) and builds the agent for each run (``build``).
Adding a kind touches one module: the class, its Config, ``@register``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from eval_pipeline.agents.context import AgentContext
from eval_pipeline.agents.langgraph_json import LangGraphJson
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.suites.conversation import Customer
from eval_pipeline.llm.model_settings import LLMSettings


class KindConfig(BaseModel):
    """What every kind's ``agent:`` mapping may say besides its own fields."""

    model_config = ConfigDict(extra="forbid")

    done_field: str | None = None  # conversations: a state field (dotted) true once finished


class Loading(Protocol):
    """What a kind may use while the project loads (the project loader's suite resolver)."""

    def target(self, fieldname: str, path: str) -> Any:
        """``package.module:attribute`` imported, or None (a problem is recorded)."""

    def problem(self, fieldname: str, message: str) -> None: ...


@dataclass(frozen=True)
class Build:
    """What a kind builds one run's agent from."""

    project_file: Path
    suite: str
    ctx: AgentContext  # the prompt version under test, the model settings, the dataset
    customer: Customer | None  # the simulated customer of conversation cases
    llm: LLMSettings
    langgraph: LangGraphJson | None = None  # the project's langgraph.json, when it has one


class AgentKind:
    """One kind of agent. ``key`` is its key under ``agent:``, ``Config`` its fields."""

    key: ClassVar[str]
    Config: ClassVar[type[KindConfig]]
    # False: the agent can change behind our back (a service), so its outputs are reused
    # from the memo only when the suite gives a `version:`.
    memoize_unversioned: ClassVar[bool] = True
    # True: a built agent knows whether it read its prompt (a graph's factory reads it);
    # otherwise only a run's notes tell (doctor).
    prompt_read_when_built: ClassVar[bool] = False

    def describe(self, config: Any, loading: Loading) -> tuple[str, tuple[Path, ...]]:
        """Check ``config`` as the project loads: what the agent is (for the report), and
        the code whose hash is its version (none: the suite's ``version:`` says)."""
        raise NotImplementedError

    def build(self, config: Any, build: Build) -> Agent:
        raise NotImplementedError


KINDS: dict[str, AgentKind] = {}


def register(cls: type[AgentKind]) -> type[AgentKind]:
    """Make ``cls`` a kind a project file may name under ``agent:``."""
    if cls.key in KINDS:
        raise ValueError(f"two agent kinds have the key {cls.key!r}")
    if cls.key not in cls.Config.model_fields:
        raise ValueError(f"agent kind {cls.key!r}: its Config needs a field {cls.key!r}")
    KINDS[cls.key] = cls()
    return cls


def kind_of_mapping(raw: Mapping[str, Any]) -> tuple[AgentKind | None, str]:
    """The kind an ``agent:`` mapping names (its one kind key), or None and why not."""
    keys = [k for k in raw if k in KINDS]
    if len(keys) == 1:
        return KINDS[keys[0]], ""
    got = f" (got {', '.join(keys)})" if keys else ""
    return None, f"give exactly one of {', '.join(KINDS)}{got}"


def kind_of_config(config: KindConfig) -> AgentKind:
    return next(k for k in KINDS.values() if isinstance(config, k.Config))
