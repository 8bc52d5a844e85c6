"""`eval-pipeline datasets sync`: a suite's golden cases mirrored into Langfuse."""

from __future__ import annotations

import click

from eval_pipeline.cli.report import console
from eval_pipeline.core.errors import ConfigurationError, ServiceError
from eval_pipeline.core.util.redact import redact


@click.group()
def datasets() -> None:
    """Golden datasets: mirror them into Langfuse."""


@datasets.command("sync")
@click.option("--suite", "suite_name", required=True, help="Suite whose dataset to sync.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
def datasets_sync(suite_name: str, dry_run: bool) -> None:
    """Upsert the suite's golden cases into the Langfuse dataset eval-pipeline/SUITE
    (deterministic item ids: re-running creates no duplicates; removed cases are archived).
    Needs LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY and LANGFUSE_BASE_URL."""
    import httpx
    from langfuse.api.core.api_error import ApiError

    from eval_pipeline.agents.project import load_project
    from eval_pipeline.integrations.langfuse_client import LangfuseSettings, describe_error
    from eval_pipeline.integrations.langfuse_datasets import sync_dataset

    langfuse = LangfuseSettings.from_env()
    if langfuse is None:
        raise ConfigurationError(
            "Langfuse is not configured: set LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY and "
            "LANGFUSE_BASE_URL (nothing was written)"
        )
    suite = load_project().suite(suite_name)
    cases = suite.load_cases()
    try:
        report = sync_dataset(langfuse.client(), suite.name, cases, dry_run=dry_run)
    except (ApiError, httpx.HTTPError) as exc:
        reason = describe_error(exc)
        raise ServiceError(redact(f"Langfuse at {langfuse.base_url} failed: {reason}")) from exc
    counts = ", ".join(f"{n} {k}" for k, n in report.counts().items())
    verb = "would sync" if dry_run else "synced"
    console.print(f"{report.dataset} (dataset version {report.dataset_version}): {verb}: {counts}")
