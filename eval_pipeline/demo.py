"""`eval-pipeline demo`: the whole asset graph on embedded defaults, in-process.

Launches the real jobs (golden_dataset_job, eval_job) on a real Dagster instance
(DAGSTER_HOME, SQLite), so `dagster dev` shows them afterwards; the offline model, the
local prompt registry and the SQLite results store.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagster import DagsterInstance, MultiPartitionKey
from rich.console import Console

from eval_pipeline import settings
from eval_pipeline.agents.project import load_project
from eval_pipeline.core import evaluation
from eval_pipeline.defs import build_definitions
from eval_pipeline.defs.partitions import prompt_version_partitions
from eval_pipeline.integrations.services import Services
from eval_pipeline.report import print_result

# The report is the demo's output; Dagster's own step log stays in the run (see the UI).
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def run_demo(console: Console, suites: tuple[str, ...] | None = None) -> int:
    home = Path(os.environ["DAGSTER_HOME"])
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    project = load_project()
    defs = build_definitions(project.path)
    golden_job = defs.resolve_job_def("golden_dataset_job")
    eval_job = defs.resolve_job_def("eval_job")
    instance = DagsterInstance.get()
    services = Services.from_env(project.prompts_dir)
    store = defs.resources["results_store"].open()
    exit_code = 0
    for name in suites or project.suite_names:
        suite = project.suite(name)
        prompt = services.prompt(suite, label="production")
        key = evaluation.prompt_key(prompt)
        instance.add_dynamic_partitions(prompt_version_partitions.name, [key])
        described = f"{prompt.name} {key} (production label)" if prompt else "no prompt"
        console.print(f"[bold]{name}[/]: golden_dataset_job → eval_job on {described}")
        loaded = golden_job.execute_in_process(
            partition_key=name, instance=instance, run_config=QUIET, raise_on_error=False
        )
        if not loaded.success:
            console.print(f"[red]golden_dataset[{name}] failed:[/]\n{_step_error(loaded)}")
            return 2
        result = eval_job.execute_in_process(
            partition_key=MultiPartitionKey({"suite": name, "prompt_version": key}),
            instance=instance, run_config=QUIET, raise_on_error=False,
        )  # fmt: skip
        run = store.list_runs(suite=name, prompt_version=key, limit=1)[0]
        summary = store.read_summary(run.run_id)
        if summary is None:
            console.print(f"[red]eval_job[{name}] failed:[/]\n{_step_error(result)}")
            return 2
        cases = evaluation.cases_of_run(store, run.run_id, suite)
        judged = evaluation.judge(store, run, suite, cases, summary,
                                  baseline_note="see the run in the Dagster UI")  # fmt: skip
        print_result(console, judged)
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
