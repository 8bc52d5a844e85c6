"""The project file's shape (``eval-pipeline.yaml``), validated before anything runs.

```yaml
prompts: prompts                   # the local prompt registry (default: prompts/)
plugins: [my_evals]                # modules imported first: your own evaluators, agent
                                   # kinds and offline behaviours register themselves
suites:
  support:
    agent: my_agent.graph:build    # a compiled graph, a factory(ctx) returning one, or
                                   # fn(input, ctx) -> dict; or a mapping: {graph: …},
                                   # {callable: …} or {http: URL} (agents/adapters/kinds.py)
    dataset: evals/support         # a directory of cases*.yaml / cases*.jsonl
    prompt: support/assistant      # a name in the prompt registry (optional)
    evaluators:                    # built-in names, with parameters, or package.module:fn
      - correctness
      - trajectory_match: {mode: unordered, tool_args_match_mode: subset}
    thresholds: evals/support/thresholds.yaml   # or inline; default <dataset>/thresholds.yaml
replay:                            # optional (docs/record-replay.md)
  generated_patterns: ['ord-[0-9a-f]{10}']   # your own generated values, beside uuids
```
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from eval_pipeline.agents.targets import ImportPath, check_import_path
from eval_pipeline.core.options import DEFAULTS
from eval_pipeline.core.prompts.labels import LABEL, LABEL_RULE
from eval_pipeline.core.running.ids import pattern_problem

MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")  # a Dagster partition key


def _label(label: str) -> str:
    """A label no registry can carry (Langfuse's rule) never moves: a sensor watching it
    would never evaluate a version."""
    if not LABEL.match(label):
        raise ValueError(f"{label!r} is not a label: use {LABEL_RULE}")
    return label


Label = Annotated[str, AfterValidator(_label)]


def _pattern(pattern: str) -> str:
    if problem := pattern_problem(pattern):
        raise ValueError(f"{pattern!r}: {problem}")
    return pattern


GeneratedPattern = Annotated[str, AfterValidator(_pattern)]

# An evaluator entry: "name", "package.module:function", or {"name": {param: value}}.
EvaluatorEntry = str | dict[str, dict[str, Any] | None]


class CustomerConfig(BaseModel):
    """``customer:``: the simulated customer of the suite's conversation cases."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None  # default: the run's model (offline without an endpoint)
    sees: list[str] = Field(default_factory=list)  # state fields shown to the customer


class ReplayConfig(BaseModel):
    """``replay:``: how ``--replay`` matches requests (docs/record-replay.md)."""

    model_config = ConfigDict(extra="forbid")

    # Regular expressions for values your agent draws afresh on every run (beside the
    # uuids and ULIDs every replay recognises): compared by order of appearance.
    generated_patterns: list[GeneratedPattern] = Field(default_factory=list)


class SuiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str | dict[str, Any]  # an import path, or one kind's mapping (adapters/kinds.py)
    dataset: str
    prompt: str | None = None
    watched_labels: list[Label] = Field(default_factory=lambda: ["production", "staging"])
    evaluators: list[EvaluatorEntry] = Field(min_length=1)
    run_evaluators: list[EvaluatorEntry] = Field(default_factory=list)
    thresholds: str | dict[str, Any] | None = None
    repeats: int = Field(1, ge=1, le=100)
    # Items in flight in the runs the sensor and the nightly schedule start (their shards
    # follow from it: one per 32 in flight, docs/kubernetes.md).
    concurrency: int = Field(DEFAULTS.concurrency, ge=1, le=4096)
    categories: list[str] | None = None
    absence_categories: list[str] = Field(default_factory=list)
    case_validator: ImportPath | None = None  # package.module:fn(case) -> [(field, problem)]
    trace_name: str | None = None
    trace_evaluators: list[EvaluatorEntry] = Field(default_factory=list)
    source: list[str] | None = None  # paths or package names: the agent's code version
    version: str | None = None  # the agent's own version (needed to memoize HTTP agents)
    customer: CustomerConfig | None = None

    @field_validator("agent")
    @classmethod
    def _agent(cls, value: str | dict[str, Any]) -> str | dict[str, Any]:
        return check_import_path(value) if isinstance(value, str) else value


class ProjectConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompts: str = "prompts"
    plugins: list[str] = []
    suites: dict[str, SuiteConfig] = Field(min_length=1)
    replay: ReplayConfig = Field(default_factory=ReplayConfig)

    @field_validator("plugins")
    @classmethod
    def _modules(cls, plugins: list[str]) -> list[str]:
        for name in plugins:
            if not MODULE.match(name):
                raise ValueError(f"{name!r} is not a module name: write package.module")
        return plugins

    @field_validator("suites")
    @classmethod
    def _names(cls, suites: dict[str, SuiteConfig]) -> dict[str, SuiteConfig]:
        for name in suites:
            if not SUITE_NAME.match(name):
                raise ValueError(
                    f"suite name {name!r}: use letters, digits, '_' and '-' (at most 64)"
                )
        return suites
