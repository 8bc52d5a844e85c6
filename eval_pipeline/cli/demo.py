"""`eval-pipeline demo`: the whole asset graph on embedded defaults, in-process.

Runs the real jobs (golden_dataset_job, eval_job) on a real Dagster instance (DAGSTER_HOME,
SQLite) as runs of the code location `dagster dev -w workspace.yaml` loads
(defs/located.py), so its Overview, the jobs' Runs tabs and the asset pages show them
afterwards; the offline model, the local prompt registry and the SQLite results store.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click
from dagster import DagsterInstance
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding

from eval_pipeline import settings
from eval_pipeline.agents.project import load_project
from eval_pipeline.cli.report import console, print_gate, print_result
from eval_pipeline.core import evaluation
from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.evaluation import Verdict
from eval_pipeline.core.reports.result_file import ResultFile
from eval_pipeline.core.store.records import VerdictRecord
from eval_pipeline.core.util.redact import redact
from eval_pipeline.defs.instance import write_local_instance
from eval_pipeline.defs.located import LocatedJobs, located_jobs
from eval_pipeline.defs.partitions import EvalPartition, add_partitions
from eval_pipeline.integrations.services import Services
from eval_pipeline.service.environment import open_store

# The report is the demo's output; Dagster's own step log (a failed gate's too) stays in
# the run (see the UI).
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def run_demo(
    console: Console, suites: tuple[str, ...] | None = None, *, reports: bool = False
) -> int:
    """Per suite: golden_dataset_job, then eval_job on the production version and on the
    staging version, gated against production (both on the full tier: on the five smoke
    cases of order_management the gate could not tell, and the demo said every staging
    run failed while that one printed PASS). The exit code is the production runs':
    staging's v2 is the deliberately worse prompt, and the demo shows the gate on it."""
    home = Path(os.environ["DAGSTER_HOME"])
    write_local_instance(home)  # the queue, tag limits and pools `dagster dev` will use
    project = load_project()
    instance = DagsterInstance.get()
    with located_jobs(instance, project.path.parent) as jobs:
        demo = Demo(console, jobs, Services.from_env(project.prompts_dir))
        return _demo(console, demo, project, suites or tuple(project.suite_names), reports)


def _demo(console: Console, demo: Demo, project: Any, suites: tuple[str, ...],
          reports: bool) -> int:  # fmt: skip
    """One line per run, each saying what the demo expected of it (the whole report and
    gate with ``reports``), then where to look next and the demo's own outcome."""
    console.print(
        f"eval-pipeline demo: the {len(suites)} example suites of {escape(str(project.path))} "
        "through Dagster's jobs, on the offline model (no key, no server). Per suite, the "
        "prompt version labelled production should PASS; the deliberately worse one labelled "
        "staging, gated against it, should FAIL. --reports prints every run's whole report.",
        highlight=False,
    )
    failed: list[str] = []  # suites whose production run did not pass
    caught = 0
    for name in suites:
        suite = project.suite(name)
        console.print(f"\n[bold]{escape(name)}[/]")
        loaded = demo.jobs.run("golden_dataset_job", name, QUIET, {})
        if not loaded.is_success:
            console.print(f"[red]golden_dataset[{name}] failed:[/]\n"
                          f"{_step_error(demo.instance, loaded.run_id)}")  # fmt: skip
            return 2
        judged = demo.evaluate(suite, "production", "full")
        if judged is None:
            return 2
        production, verdict = judged
        if reports:
            print_result(console, production)
        if verdict.verdict is not Verdict.PASS:
            failed.append(name)
        console.print(Padding(production_line(production, verdict), (0, 0, 0, 2), expand=False))
        judged = demo.evaluate(suite, "staging", "full")
        if judged is None or judged[0].run.prompt_version == production.run.prompt_version:
            continue
        staging, staged = judged
        if reports:
            console.rule(f"{name}: staging {staging.run.prompt_version} against production "
                         f"{production.run.prompt_version}")  # fmt: skip
            print_gate(console, ResultFile.of(staging).gate, staging.gate_note)
        caught += staged.verdict is Verdict.FAIL
        line = staging_line(staging, staged, production.run.prompt_version)
        console.print(Padding(line, (0, 0, 0, 2), expand=False))
    console.rule("Where to look next")
    console.print(
        f"Dagster UI: DAGSTER_HOME={demo.instance.root_directory} dagster dev -w workspace.yaml\n"
        "  (the production and staging versions are evaluated: the label sensor starts no run "
        "until a label moves)\n"
        f"Results store: {redact(settings.results_url())} (eval-pipeline verdicts lists it)\n"
        "Gate a version yourself, with its whole report: eval-pipeline run --suite drive_thru "
        "--label staging --baseline production",
        highlight=False,
    )
    exit_code = 1 if failed else 0
    console.print(
        f"Demo {'done' if not failed else 'FAILED'}: production passed in "
        f"{len(suites) - len(failed)} of {len(suites)} suites"
        + (f" (not in {', '.join(failed)})" if failed else "")
        + f"; the gate caught the deliberately worse staging prompt in {caught} of "
        f"{len(suites)} (exit {exit_code})",
        highlight=False,
    )
    return exit_code


def production_line(result: evaluation.EvalResult, said: VerdictRecord) -> str:
    """``production v1 (47 cases): PASS — order_correctness 100.0%, 47/47 passed``: a
    production run should pass; one that does not fails the demo."""
    summary = result.summary
    primary = result.thresholds.primary_metric
    shown = [f"{primary} {summary.metrics[primary]:.1%}"] if summary.metrics.get(
        primary) is not None else []  # fmt: skip
    if summary.passed:
        shown.append(f"{summary.passed.count}/{summary.passed.of} passed")
    if summary.n_errors:
        shown.append(f"{summary.n_errors} errors")
    head = f"production {result.run.prompt_version} ({summary.n_cases} cases): "
    if said.verdict is Verdict.PASS:
        return escape(head + "PASS — " + ", ".join(shown))
    return escape(f"{head}{said.verdict} — {said.reason} (production should pass: the "
                  "demo exits 1)")  # fmt: skip


def staging_line(result: evaluation.EvalResult, said: VerdictRecord, baseline: str) -> str:
    """``staging v2 against v1: FAIL, as expected — the gate caught it: tool_call_accuracy
    Δ -0.412 [-0.541, -0.019] (min_mean_scores, paired_gate)``: the staging run's own
    verdict, which is not the demo's."""
    head = f"staging {result.run.prompt_version} against {baseline}: {said.verdict}"
    evidence = f": {said.metric} Δ {said.delta_text} {said.interval_text}" if said.metric else ""
    if said.verdict is Verdict.FAIL:
        line = f"{head}, as expected — the gate caught it{evidence} ({said.reason})"
    elif said.verdict is Verdict.UNDECIDED:
        line = f"{head} — the gate could not yet decide on it{evidence} ({said.reason})"
    else:
        line = f"{head}, not as expected — the gate did not catch it{evidence}"
    return escape(line)


class Demo:
    """Runs eval_job for a suite's labelled version and reads back what it concluded: the
    verdict eval_summary stored (the run service's ``finish``), and the evidence shown
    with it."""

    def __init__(self, console: Console, jobs: LocatedJobs, services: Services):
        self.console, self.jobs, self.services = console, jobs, services
        self.instance = jobs.instance
        self.store = open_store(settings.results_url())  # (the resource holds an EnvVar)

    def evaluate(
        self, suite: Any, label: str, tier: str
    ) -> tuple[evaluation.EvalResult, VerdictRecord] | None:
        prompt = self.services.prompt(suite, label=label)
        key = evaluation.prompt_key(prompt)
        partition = EvalPartition(suite.name, key)
        add_partitions(self.instance, [partition])
        config = {**QUIET, "ops": {"agent_run_outputs": {"config": {"tier": tier}}}}
        ran = self.jobs.run("eval_job", partition.key, config,
                            {"eval/label": label, "eval/tier": tier,
                             "eval/trigger": "demo"})  # fmt: skip
        runs = self.store.list_runs(suite=suite.name, prompt_version=key, tier=tier, limit=1)
        summary = self.store.read_summary(runs[0].run_id) if runs else None
        verdict = self.store.read_verdict(runs[0].run_id) if runs else None
        if summary is None or verdict is None:
            self.console.print(f"[red]eval_job[{suite.name} {key}] failed:[/]\n"
                               f"{_step_error(self.instance, ran.run_id)}")  # fmt: skip
            return None
        run = runs[0]  # (the rows printed with it are rebuilt from the stored run)
        cases = evaluation.cases_of_run(self.store, run.run_id, suite.load_cases())
        shown = evaluation.verdict(self.store, run, suite, cases, summary, suite.load_cases())
        return shown, verdict


def _step_error(instance: DagsterInstance, run_id: str) -> str:
    """The innermost error message of the first failed step (what the user has to fix)."""
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        if event is not None and event.event_type_value == "STEP_FAILURE":
            error = event.step_failure_data.error
            while error is not None and error.cause is not None:
                error = error.cause
            if error is not None:
                return error.message.strip()
    return "unknown error (see the run in the Dagster UI)"


@click.command()
@click.option("--reports", is_flag=True, help="Print every run's whole report and gate, as "
              "`eval-pipeline run` does, beside its one line.")  # fmt: skip
def demo(reports: bool) -> None:
    """Materialize the whole asset graph on embedded defaults and print the summary: the
    project found here (EVAL_PROJECT, or the working directory and its parents), else the
    repository's examples."""
    if settings.fall_back_to_examples() is None:
        raise ConfigurationError(
            f"no {settings.PROJECT_FILE} here and no examples to run: the demo runs the "
            "examples of a source checkout (examples/, beside the package); clone the "
            "repository and install it with pip install -e . (or name a project with "
            "--project / EVAL_PROJECT)"
        )
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(settings.eval_home() / "dagster")))
    home.mkdir(parents=True, exist_ok=True)
    sys.exit(run_demo(console, reports=reports))
