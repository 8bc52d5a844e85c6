"""Langfuse when it is configured, else the local, file-backed equivalents: decided here.

The CLI builds ``Services`` from the environment, the Dagster resources from their
``EnvVar``-backed config; both get the same prompt registry, trace source, tracing and
score write-back for the same settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_pipeline.core.prompts.labels import PromptError, PromptVersion
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.scoring.summary import RunEvaluation
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.integrations import langfuse_datasets, langfuse_scores
from eval_pipeline.integrations.langfuse_client import LangfuseSettings
from eval_pipeline.integrations.langfuse_experiments import (
    ExperimentDataset,
    RunVerdict,
    experiment_dataset,
    experiment_url,
    link_run,
    reads_experiments,
    run_metadata,
)
from eval_pipeline.integrations.langfuse_prompts import LangfusePromptRegistry
from eval_pipeline.integrations.langfuse_score_configs import with_configs
from eval_pipeline.integrations.langfuse_tracing import TracedAgent
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry, PromptRegistry
from eval_pipeline.integrations.trace_sources import (
    LangfuseTraceSource,
    LocalTraceSource,
    TraceSource,
)
from eval_pipeline.llm.model_settings import LLMSettings

PAGE_TIMEOUT_S = 30  # one page of 1,000 observations


@dataclass(frozen=True)
class Services:
    langfuse: LangfuseSettings | None
    prompts_dir: Path

    @classmethod
    def from_env(cls, prompts_dir: Path) -> Services:
        return cls(LangfuseSettings.from_env(), Path(prompts_dir))

    @property
    def description(self) -> str:
        if self.langfuse is None:
            return "not configured (local files)"
        return f"langfuse ({self.langfuse.base_url})"

    def own_hosts(self) -> tuple[str, ...]:
        """Where our own traffic goes (the Langfuse server): never recorded nor blocked."""
        return (self.langfuse.base_url,) if self.langfuse is not None else ()

    def client(self) -> Any:
        """The SDK client, or None without Langfuse. (The SDK shares its HTTP clients and
        exporters per public key in a process, so a new client object costs little.)"""
        return self.langfuse.client() if self.langfuse is not None else None

    def suite(self, suite: Suite) -> Suite:
        """The suite with its case source: a ``dataset: langfuse:…`` suite reads its items
        through this project's Langfuse client (without Langfuse, loading its cases is a
        DatasetError saying so); a local suite is returned as it is."""
        if suite.dataset_ref is None or self.langfuse is None:
            return suite
        client = self.client()
        return dataclasses.replace(
            suite, case_source=lambda ref: langfuse_datasets.fetch_raw_cases(client, ref)
        )

    def registry(self) -> PromptRegistry:
        if self.langfuse is None:
            return LocalPromptRegistry(self.prompts_dir)
        return LangfusePromptRegistry(self.langfuse)

    def prompt(self, suite: Suite, *, version: int | None = None,
               label: str | None = "production") -> PromptVersion | None:  # fmt: skip
        """The prompt version a run evaluates: ``version``, else the one ``label`` points to;
        None for a suite that declares no prompt."""
        if suite.prompt_name is None:
            if version:
                raise PromptError(f"suite {suite.name} declares no prompt: drop --prompt-version")
            return None
        registry = self.registry()
        if version is not None:
            return registry.get(suite.prompt_name, version)
        return registry.get_by_label(suite.prompt_name, label or "production")

    def trace_source(self) -> TraceSource:
        if self.langfuse is None:
            return LocalTraceSource()
        return LangfuseTraceSource(self.langfuse, timeout_s=PAGE_TIMEOUT_S)

    def agent(self, suite: Suite, prompt: PromptVersion | None, settings: LLMSettings, *,
              run: RunRecord, metadata: Mapping[str, str] | None = None,
              cases: Sequence[GoldenCase] | None = None) -> Agent:  # fmt: skip
        """The agent of one run (its factory runs here), each item traced when Langfuse is
        configured: the one place every entry point gets its agent from. ``cases``: the
        suite's, as the run loaded them (else read here)."""
        made = suite.make_agent(prompt, settings)
        if self.langfuse is None:
            return made
        cases = suite.load_cases() if cases is None else cases
        dataset = experiment_dataset(self.langfuse, self.client(), suite.name, cases,
                                     suite.dataset_ref)  # fmt: skip
        return self.traced(made, run_id=run.run_id, suite=suite.name, prompt=prompt,
                           metadata={**run_metadata(run), **(metadata or {})},
                           dataset=dataset)  # fmt: skip

    def traced(self, agent: Agent, *, run_id: str, suite: str, prompt: PromptVersion | None,
               metadata: Mapping[str, str] | None = None,
               dataset: ExperimentDataset | None = None) -> Agent:  # fmt: skip
        """One Langfuse trace per evaluated item, in the evaluation environment, the
        agent's generations linked to the prompt version under test (Langfuse's prompt
        metrics) and, on v4, its experiment to the suite's dataset; the agent itself
        without Langfuse."""
        if self.langfuse is None:
            return agent
        version = prompt.partition_key if prompt is not None else "v0"
        return TracedAgent(
            agent, self.client(), public_key=self.langfuse.public_key, run_id=run_id,
            trace_name=f"eval-{suite}",
            tags=["eval-pipeline", f"suite:{suite}", f"prompt:{version}"],
            metadata={"suite": suite, "prompt_version": version, "run_id": run_id,
                      **(metadata or {})},
            environment=self.langfuse.environment, suite=suite,
            prompt=None if prompt is None else {"name": prompt.name, "version": prompt.version},
            dataset=dataset, trace_reused=reads_experiments(self.langfuse),
        )  # fmt: skip

    def flush(self) -> None:
        if self.langfuse is not None:
            self.client().flush()

    def write_run(
        self, store: ResultsStore, run: RunRecord, cases: Sequence[GoldenCase],
        scores: Sequence[ItemScore], outputs: Sequence[ItemOutput],
        metrics: Mapping[str, float | None],
        suite: Suite | None = None, *,
        evaluations: Mapping[str, RunEvaluation] | None = None,
        verdict: RunVerdict | None = None,
    ) -> langfuse_scores.WritebackReport | None:  # fmt: skip
        """A run's item scores onto their traces, each naming its score config
        (langfuse_score_configs.py, with ``suite``'s category scales), the run linked as
        an experiment of its dataset (langfuse_experiments.py; a ``langfuse:`` suite's
        own) and its own scores onto it: its means, its run-level ``evaluations`` and the
        gate's ``verdict`` (or onto its session, when it could not be linked: the report
        says why); its link compares it with its baseline's experiment; never raises.

        ``cases``: the suite's, as the run loaded them (its dataset mirrors the whole
        suite, as the run's spans named it in ``agent``: synced with a smoke run's cases
        only, it archived the rest, seen on a dual-mode server)."""
        if self.langfuse is None:
            return None
        ref = suite.dataset_ref if suite is not None else None
        linked = link_run(self.langfuse, self.client(), cases, run, outputs, ref, verdict)
        # (v4: memo-served items have a span in this run's trace: their scores go there)
        environment = self.langfuse.environment  # (the traces')
        items = langfuse_scores.item_score_payloads(
            run.run_id,
            scores,
            outputs,
            own_traces=reads_experiments(self.langfuse),
            environment=environment,
        )
        scales = suite.thresholds.categories if suite is not None else {}
        payloads = with_configs(self.langfuse, items, scales)
        payloads |= langfuse_scores.run_score_payloads(
            run.run_id, metrics, evaluations=evaluations, verdict=verdict,
            dataset_run_id=linked.dataset_run_id, environment=environment,
        )  # fmt: skip
        report = self.write_back(store, payloads)
        baseline = run.baseline_run_id
        linked = dataclasses.replace(linked, compared=baseline is not None,
                                     url=experiment_url(self.langfuse, run.run_id, baseline))
        return dataclasses.replace(report, experiment=linked) if report else None

    def write_back(
        self, store: ResultsStore, payloads: dict[str, dict[str, Any]]
    ) -> langfuse_scores.WritebackReport | None:
        """Scores onto their traces (never raises; undelivered ones wait in the outbox)."""
        if self.langfuse is None:
            return None
        return langfuse_scores.write_back(self.langfuse, store, payloads)
