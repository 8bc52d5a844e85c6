"""A suite: one agent + its golden dataset + evaluators + thresholds + watched prompt."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from eval_pipeline.core.agent import Agent
from eval_pipeline.core.cases import CaseValidator, GoldenCase, load_cases
from eval_pipeline.core.memo import dataset_resources, source_fingerprint
from eval_pipeline.core.prompts import PromptVersion
from eval_pipeline.core.scoring import Evaluator, RunEvaluator, evaluator_name
from eval_pipeline.core.thresholds import Thresholds, load_thresholds

AgentFactory = Callable[[PromptVersion, Any], Agent]  # (prompt, LLM settings) -> agent


@dataclass(frozen=True)
class Suite:
    name: str
    dataset_dir: Path
    prompt_name: str
    categories: tuple[str, ...]
    absence_categories: tuple[str, ...]  # categories whose cases expect "do nothing"
    make_agent: AgentFactory
    evaluators: Sequence[Evaluator]
    run_evaluators: Sequence[RunEvaluator] = ()
    validate_case: CaseValidator | None = None
    watched_labels: tuple[str, ...] = ("production", "staging")
    repeats: int = 1
    agent_version: str = "1"
    evaluator_versions: dict[str, str] = field(default_factory=dict)
    trace_name: str = ""  # name of the agent's root observation in production traces
    trace_evaluators: Sequence[Evaluator] = ()  # reference-free, for production traces
    source_dirs: tuple[Path, ...] = ()  # the agent's code, fingerprinted into code_version

    @property
    def thresholds_path(self) -> Path:
        return self.dataset_dir / "thresholds.yaml"

    @cached_property
    def thresholds(self) -> Thresholds:
        return load_thresholds(self.thresholds_path)

    @cached_property
    def code_version(self) -> str:
        """``agent_version`` plus a hash of the agent's code and the data files it reads:
        any edit there changes the memo keys of the suite's items."""
        files = [*self.source_dirs, *dataset_resources(self.dataset_dir)]
        return f"{self.agent_version}+{source_fingerprint(files)}"

    def load_cases(self) -> list[GoldenCase]:
        return load_cases(self.dataset_dir, categories=self.categories, validate=self.validate_case)

    def versions_of_evaluators(self) -> dict[str, str]:
        names = [evaluator_name(f) for f in [*self.evaluators, *self.run_evaluators]]
        return {n: self.evaluator_versions.get(n, "1") for n in names}
