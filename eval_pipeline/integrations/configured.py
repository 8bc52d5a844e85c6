"""The integrations the environment asks for (CLI path; Dagster uses resources + EnvVar)."""

from __future__ import annotations

from pathlib import Path

from eval_pipeline.integrations.langfuse_client import LangfuseSettings
from eval_pipeline.integrations.langfuse_prompts import LangfusePromptRegistry
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry, PromptRegistry


def prompt_registry_from_env(prompts_dir: Path) -> PromptRegistry:
    """Langfuse when LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are set, else local files."""
    langfuse = LangfuseSettings.from_env()
    if langfuse is None:
        return LocalPromptRegistry(prompts_dir)
    return LangfusePromptRegistry(
        langfuse.client(tracing_enabled=False), base_url=langfuse.base_url,
        timeout_s=langfuse.timeout_s,
    )  # fmt: skip
