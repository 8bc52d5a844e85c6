"""Shared by the sensor and the schedules: which prompts the suites watch, run requests."""

from __future__ import annotations

import os
from urllib.parse import urlparse

from dagster import RunConfig, RunRequest

from eval_pipeline.agents.project import ProjectError
from eval_pipeline.core.prompts.label_moves import WatchedPrompt
from eval_pipeline.core.running.shards import auto_count
from eval_pipeline.core.suites.cases import DatasetError, select_tier
from eval_pipeline.defs.evaluation.execution import execution_config
from eval_pipeline.defs.evaluation.outputs import EvalRunConfig
from eval_pipeline.defs.partitions import EvalPartition
from eval_pipeline.defs.resources import SuitesResource
from eval_pipeline.llm.model_settings import LLMSettings


def env_setting(name: str, default: str) -> str:
    """Automation settings are read when the code location loads (restart to change)."""
    return os.environ.get(name) or default


def watched_prompts(suites: SuitesResource) -> list[WatchedPrompt]:
    """Every suite's prompt and the labels it watches, read from the project file (a suite
    without a prompt has no label to watch)."""
    declared = suites.project_file().config.suites
    return [
        WatchedPrompt(name, config.prompt, tuple(config.watched_labels))
        for name, config in declared.items()
        if config.prompt
    ]


def eval_run_request(
    suites: SuitesResource,
    suite: str,
    version: str,
    tier: str,
    *,
    run_key: str,
    tags: dict[str, str],
    cache: str = "reuse",
) -> RunRequest:
    """A run of eval_job for one partition at the suite's concurrency; the shards that
    implies decide whether its steps get processes of their own (execution.py)."""
    config, items = EvalRunConfig(tier=tier, cache=cache), 0
    try:
        chosen = suites.get(suite)
        config = EvalRunConfig(tier=tier, cache=cache, concurrency=chosen.concurrency)
        items = len(select_tier(chosen.load_cases(), tier)) * chosen.repeats
    except (DatasetError, ProjectError):
        pass  # the run itself fails, with the reason (and the run config's default concurrency)
    return RunRequest(
        run_key=run_key,
        partition_key=EvalPartition(suite, version).key,
        run_config={
            **RunConfig(ops={"agent_run_outputs": config}).to_config_dict(),
            **execution_config(auto_count(items, config.concurrency)),
        },
        tags={**tags, "eval/model_provider": model_provider()},
    )


def model_provider() -> str:
    """The run-queue tag that limits concurrent runs per provider (deploy/dagster.yaml):
    the endpoint's host, "openai" for OpenAI itself, or "offline"."""
    settings = LLMSettings.from_env()
    if settings.provider == "offline":
        return "offline"
    host = urlparse(settings.base_url).hostname if settings.base_url else None
    return host or "openai"
