"""`eval-pipeline demo`: the whole asset graph on embedded defaults, in-process.

Uses a real Dagster instance (DAGSTER_HOME, SQLite) so `dagster dev` shows the runs
afterwards, the offline model, the local prompt registry and the SQLite results store.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagster import DagsterInstance, MultiPartitionKey, materialize
from rich.console import Console

from eval_pipeline import settings
from eval_pipeline.agents.registry import SUITE_NAMES, get_suite
from eval_pipeline.core.thresholds import evaluate_thresholds
from eval_pipeline.defs.evaluation.assets import golden_dataset
from eval_pipeline.defs.evaluation.definitions import EVAL_ASSETS
from eval_pipeline.defs.partitions import prompt_version_partitions
from eval_pipeline.defs.resources import default_resources
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry
from eval_pipeline.report import print_report

# The report is the demo's output; Dagster's own step log stays in the run (see the UI).
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def run_demo(console: Console, suites: tuple[str, ...] = SUITE_NAMES) -> int:
    home = Path(os.environ["DAGSTER_HOME"])
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = DagsterInstance.get()
    resources = default_resources()
    store = resources["results_store"].open()
    registry = LocalPromptRegistry(settings.prompts_dir())
    exit_code = 0
    for name in suites:
        suite = get_suite(name)
        prompt = registry.get_by_label(suite.prompt_name, "production")
        instance.add_dynamic_partitions(prompt_version_partitions.name, [prompt.partition_key])
        console.print(f"[bold]{name}[/]: golden_dataset → evaluating {prompt.name} "
                      f"{prompt.partition_key} (production label)")  # fmt: skip
        loaded = materialize(
            [golden_dataset], partition_key=name, instance=instance, resources=resources,
            raise_on_error=False, run_config=QUIET,
        )  # fmt: skip
        if not loaded.success:
            console.print(f"[red]golden_dataset[{name}] failed:[/]\n{_step_error(loaded)}")
            return 2
        key = MultiPartitionKey({"suite": name, "prompt_version": prompt.partition_key})
        result = materialize(
            [golden_dataset, *EVAL_ASSETS],
            selection=EVAL_ASSETS,
            partition_key=key,
            instance=instance,
            resources=resources,
            raise_on_error=False,
            run_config=QUIET,
        )
        run = store.list_runs(suite=name, prompt_version=prompt.partition_key, limit=1)[0]
        summary = store.read_summary(run.run_id)
        checks = evaluate_thresholds(summary, store.read_scores(run.run_id), suite.thresholds)
        print_report(console, run, summary, checks)
        if not result.success:
            console.print("[red]A blocking check failed: see the run in the Dagster UI.")
            exit_code = 1
    console.rule("Where to look next")
    console.print(
        f"Dagster UI: DAGSTER_HOME={instance.root_directory} dagster dev -w workspace.yaml\n"
        f"Results store: {settings.results_url()}\n"
        "A worse prompt: eval-pipeline run --suite drive_thru --prompt-version 2"
    )
    return exit_code


def _step_error(result) -> str:
    """The innermost error message of the first failed step (what the user has to fix)."""
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            error = event.event_specific_data.error
            while error.cause is not None:
                error = error.cause
            return error.message.strip()
    return "unknown error (see the run in the Dagster UI)"
