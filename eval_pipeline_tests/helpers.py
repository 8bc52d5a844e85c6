"""Shared test set-up: Dagster resources on temporary storage, sensor ticks, the eval job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import Definitions, SensorResult, build_sensor_context

from eval_pipeline.defs.automation.sensors import prompt_label_sensor
from eval_pipeline.defs.evaluation.definitions import defs as evaluation_defs
from eval_pipeline.defs.resources import (
    LangfuseResource,
    LLMResource,
    PromptRegistryResource,
    ResultsStoreResource,
    SuitesResource,
)

ROOT = Path(__file__).resolve().parents[1]


def production_prompt(suite: Any) -> Any:
    """The shipped prompt version a suite's `production` label points at."""
    from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry

    return LocalPromptRegistry(ROOT / "prompts").get_by_label(suite.prompt_name, "production")


def eval_resources(
    tmp_path: Path,
    *,
    datasets_dir: Path = ROOT / "datasets",
    prompts_dir: Path = ROOT / "prompts",
    langfuse: LangfuseResource | None = None,
) -> dict[str, Any]:
    """The evaluation resources with the results store in ``tmp_path``."""
    langfuse = langfuse or LangfuseResource()
    return {
        "results_store": ResultsStoreResource(url=f"sqlite:///{tmp_path / 'results.sqlite'}"),
        "suites": SuitesResource(datasets_dir=str(datasets_dir)),
        "prompt_registry": PromptRegistryResource(prompts_dir=str(prompts_dir), langfuse=langfuse),
        "llm": LLMResource(),
        "langfuse": langfuse,
    }


def sensor_tick(instance, resources, cursor=None):
    """One prompt_label_sensor tick: (result, the context's cursor afterwards). Applies the
    dynamic-partition requests, which build_sensor_context does not do."""
    with build_sensor_context(instance=instance, cursor=cursor, resources=resources) as context:
        result = prompt_label_sensor(context)
        kept = context.cursor
    if isinstance(result, SensorResult):
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
    return result, kept


def eval_job(resources: dict[str, Any]):
    """eval_job bound to these resources, as the daemon would launch it."""
    return Definitions.merge(evaluation_defs, Definitions(resources=resources)).resolve_job_def(
        "eval_job"
    )


CONFIG_ENV = ("EVAL_LLM_BASE_URL", "EVAL_LLM_API_KEY", "OPENAI_API_KEY", "EVAL_RESULTS_URL",
              "EVAL_LLM_TEMPERATURE", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY",
              "LANGFUSE_BASE_URL", "EVAL_LLM_MODEL", "EVAL_LLM_CHECK_MODEL")  # fmt: skip


def clean_cli_env(monkeypatch, home: Path) -> Path:
    """The CLI on embedded defaults with its EVAL_HOME (and DAGSTER_HOME) under ``home``."""
    for var in CONFIG_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EVAL_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    return home
