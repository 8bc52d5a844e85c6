"""The project file's shape (``eval-pipeline.yaml``), validated before anything runs.

```yaml
prompts: prompts                   # the local prompt registry (default: prompts/)
suites:
  support:
    agent: my_agent.graph:build    # a compiled graph, a factory(ctx) returning one, or
                                   # fn(input, ctx) -> dict; or a mapping (see AgentConfig)
    dataset: evals/support         # a directory of cases*.yaml / cases*.jsonl
    prompt: support/assistant      # a name in the prompt registry (optional)
    evaluators:                    # built-in names, with parameters, or package.module:fn
      - correctness
      - trajectory_match: {mode: unordered, tool_args_match_mode: subset}
    thresholds: evals/support/thresholds.yaml   # or inline; default <dataset>/thresholds.yaml
```
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from eval_pipeline.core.options import DEFAULTS

SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")  # a Dagster partition key
IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")

# An evaluator entry: "name", "package.module:function", or {"name": {param: value}}.
EvaluatorEntry = str | dict[str, dict[str, Any] | None]


def check_import_path(value: str) -> str:
    if not IMPORT_PATH.match(value):
        raise ValueError(f"{value!r} is not an import path: write package.module:attribute")
    return value


class StepwiseConfig(BaseModel):
    """Teacher-forced evaluation on a reference trajectory (agents/adapters/stepwise.py)."""

    model_config = ConfigDict(extra="forbid")

    node: str = Field(min_length=1)  # the graph node that calls the model
    reference: str = "trajectory"  # the key of expected_output holding the reference
    args_mode: Literal["exact", "ignore", "subset", "superset"] = "exact"
    judge: StepJudgeConfig | None = None  # an LLM judges step similarity (default: matching)


class StepJudgeConfig(BaseModel):
    """``stepwise: {judge: …}``: seed 004's LLM step-similarity judge instead of matching."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None  # default: the configured endpoint's model (pinned, temp 0)
    steps: Literal["answers", "all"] = "answers"  # all: tool steps too
    pass_at: float = Field(0.7, ge=0.0, le=1.0)  # a judge score at or above it passes


class AgentConfig(BaseModel):
    """``agent:`` as a mapping: exactly one of ``graph``, ``callable`` or ``http``."""

    model_config = ConfigDict(extra="forbid")

    graph: str | None = None  # a compiled LangGraph graph, or a factory(ctx) returning one
    callable: str | None = None  # fn(input, ctx) -> dict, sync or async
    http: str | None = None  # POST the case input as JSON to this URL
    headers: dict[str, str] = Field(default_factory=dict)  # http only; ${VAR} from the env
    timeout_s: float = Field(60.0, gt=0)  # http only: one request
    input_map: dict[str, str] | None = None  # graph state key → dotted path in the input
    state_fields: list[str] = Field(default_factory=list)  # final-state fields to output
    recursion_limit: int = Field(25, ge=1)
    stepwise: StepwiseConfig | None = None
    done_field: str | None = None  # conversations: a state field (dotted) true once finished
    context: dict[str, Any] | None = None  # the graph's runtime context (its context_schema)

    @field_validator("graph", "callable")
    @classmethod
    def _import_path(cls, value: str | None) -> str | None:
        return None if value is None else check_import_path(value)

    @field_validator("http")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> AgentConfig:
        kinds = [k for k in ("graph", "callable", "http") if getattr(self, k)]
        if len(kinds) != 1:
            raise ValueError(
                "give exactly one of graph, callable or http"
                + (f" (got {', '.join(kinds)})" if kinds else "")
            )
        if self.http and (self.input_map or self.state_fields or self.stepwise or self.context):
            raise ValueError(
                "input_map, state_fields, stepwise and context apply to graphs, not http"
            )
        return self

    @property
    def kind(self) -> str:
        return "graph" if self.graph else "callable" if self.callable else "http"


class CustomerConfig(BaseModel):
    """``customer:``: the simulated customer of the suite's conversation cases."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None  # default: the run's model (offline without an endpoint)
    sees: list[str] = Field(default_factory=list)  # state fields shown to the customer


class SuiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str | AgentConfig
    dataset: str
    prompt: str | None = None
    watched_labels: list[str] = Field(default_factory=lambda: ["production", "staging"])
    evaluators: list[EvaluatorEntry] = Field(min_length=1)
    run_evaluators: list[EvaluatorEntry] = Field(default_factory=list)
    thresholds: str | dict[str, Any] | None = None
    repeats: int = Field(1, ge=1, le=100)
    # Items in flight in the runs the sensor and the nightly schedule start (their shards
    # follow from it: one per 32 in flight, docs/kubernetes.md).
    concurrency: int = Field(DEFAULTS.concurrency, ge=1, le=4096)
    categories: list[str] | None = None
    absence_categories: list[str] = Field(default_factory=list)
    case_validator: str | None = None  # package.module:fn(case) -> [(field, problem)]
    trace_name: str | None = None
    trace_evaluators: list[EvaluatorEntry] = Field(default_factory=list)
    source: list[str] | None = None  # paths or package names: the agent's code version
    version: str | None = None  # the agent's own version (needed to memoize HTTP agents)
    customer: CustomerConfig | None = None

    @field_validator("agent")
    @classmethod
    def _agent(cls, value: str | AgentConfig) -> str | AgentConfig:
        return check_import_path(value) if isinstance(value, str) else value

    @field_validator("case_validator")
    @classmethod
    def _validator(cls, value: str | None) -> str | None:
        return None if value is None else check_import_path(value)


class ProjectConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompts: str = "prompts"
    suites: dict[str, SuiteConfig] = Field(min_length=1)

    @field_validator("suites")
    @classmethod
    def _names(cls, suites: dict[str, SuiteConfig]) -> dict[str, SuiteConfig]:
        for name in suites:
            if not SUITE_NAME.match(name):
                raise ValueError(
                    f"suite name {name!r}: use letters, digits, '_' and '-' (at most 64)"
                )
        return suites
