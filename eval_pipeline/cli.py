"""`eval-pipeline`: run a suite from the command line, or the whole Dagster graph (demo).

Exit codes: 0 = pass, 1 = a blocking threshold failed, 2 = configuration or runtime error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from eval_pipeline import settings
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.redact import redact

EXIT_PASS, EXIT_FAIL, EXIT_CONFIG = 0, 1, 2
F = TypeVar("F", bound=Callable[..., Any])
console = Console()
err_console = Console(stderr=True)


class ConfigError(click.ClickException):
    exit_code = EXIT_CONFIG


@click.group()
@click.option("--project", type=click.Path(path_type=Path), default=None,
              help="The project file (default: eval-pipeline.yaml in the working directory or "
                   "a parent; also EVAL_PROJECT).")  # fmt: skip
def main(project: Path | None) -> None:
    """Evaluate LLM agents: golden datasets, scores, summaries and gates."""
    if project is not None:
        os.environ["EVAL_PROJECT"] = str(project.resolve())


def run_option(
    flag: str, name: str, help: str | None = None, metavar: str | None = None,
    default: Any = None,
) -> Callable[[F], F]:  # fmt: skip
    """A ``run`` option for the RunOptions field ``name`` (core/options.py): its default
    (unless ``default`` is given), its bounds or choices and its help come from the model,
    declared there once."""
    field = RunOptions.model_fields[name]
    default = field.default if default is None else default
    return click.option(flag, name, type=_click_type(field), default=default,
                        show_default=default is not None, metavar=metavar,
                        help=help or field.description)  # fmt: skip


def _click_type(field: Any) -> Any:
    if get_origin(field.annotation) is Literal:
        return click.Choice(list(get_args(field.annotation)))
    bounds = {type(m).__name__: m for m in field.metadata}
    low = next((getattr(bounds[k], k.lower()) for k in ("Ge", "Gt") if k in bounds), None)
    high = bounds["Le"].le if "Le" in bounds else None
    kind = next((t for t in (int, float) if t in (field.annotation, *get_args(field.annotation))),
                str)  # fmt: skip
    if kind is int:
        return click.IntRange(low, high)
    return click.FloatRange(low, high) if kind is float else click.STRING


@main.command()
@click.option("--suite", "suite_name", required=True, help="Suite to run (see the project file).")
@run_option("--tier", "tier")
@run_option("--repeat", "repeats")
@run_option("--concurrency", "concurrency", help="Items in flight, in all (split over --workers).")
@run_option(
    "--workers",
    "shards",
    help="Processes the items are split over, sharing "
    "--concurrency and one memo (one core runs ~250 model calls/s; see BENCHMARKS.md).",
)
@run_option("--timeout", "timeout_s")
@click.option("--label", default="production", show_default=True,
              help="Prompt label to evaluate (ignored with --prompt-version).")  # fmt: skip
@click.option("--prompt-version", type=int, default=None, help="Prompt version to evaluate.")
@run_option("--baseline", "baseline_label", metavar="LABEL")
@run_option("--baseline-run", "baseline_run_id", metavar="RUN_ID")
@run_option("--margin", "margin")
@run_option("--threshold", "min_primary")
@run_option("--cache", "cache")
@run_option("--gate", "gate")
@run_option("--sequential-until", "sequential_until")
@run_option("--on-undecided", "on_undecided")
@run_option("--max-repeats", "max_repeats", metavar="R")
@run_option("--max-calls", "max_calls", metavar="N")
@run_option("--max-tokens", "max_tokens", metavar="N")
@run_option("--max-cost", "max_cost", metavar="DOLLARS")
@click.option(
    "--record",
    "recording",
    flag_value="record",
    default=None,
    help="Store every outbound request and its answer in recordings/SUITE/VERSION.jsonl "
    "next to the project file (every item runs, the memo is refreshed).",
)
@click.option("--replay", "recording", flag_value="replay",
              help="Answer every outbound request from the recordings, with no endpoint; a "
                   "request never recorded fails its item and the run (exit 2).")  # fmt: skip
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None,
              help="Write the result as JSON.")  # fmt: skip
@click.option("--junit", "junit_path", type=click.Path(path_type=Path), default=None,
              help="Write JUnit XML: a test case per item and per gate.")  # fmt: skip
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None,
              help="Write a Markdown report (charts next to it).")  # fmt: skip
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="One block per case and repeat: scores, tools, latency, tokens, error.",
)
def run(
    suite_name: str,
    label: str,
    prompt_version: int | None,
    recording: str | None,
    json_path: Path | None,
    junit_path: Path | None,
    report_path: Path | None,
    verbose: bool,
    **options: Any,
) -> None:
    """Run one suite in-process, gate it, print the report; exit 0 pass, 1 fail, 2 error,
    3 undecided (0 with --on-undecided warn). The last line is the verdict."""
    from eval_pipeline import api
    from eval_pipeline.report import error_line, print_result, verdict_line

    request = RunOptions(**options)
    tier = request.tier
    try:
        prepared = api.prepare(suite_name, prompt_version=prompt_version, label=label,
                               request=request, recording=recording or "off")  # fmt: skip
        with _progress(f"{suite_name} {tier}") as report:
            result = api.run_prepared(prepared, progress=report)
    except (api.SetupError, api.RunFailed) as exc:
        click.echo(f"Error: {exc}", err=True)  # (not wrapped: paths stay whole)
        click.echo(error_line(str(exc), EXIT_CONFIG))
        sys.exit(EXIT_CONFIG)
    print_result(console, result, verbose=verbose)
    for why in result.errors:  # whole, on stderr; the verdict line below has the first
        click.echo(f"Error: {why}", err=True)
    _write_files(prepared.store, result, json_path, junit_path, report_path)
    console.print(f"Results store: {settings.results_url()}  (run {result.run.run_id})")
    click.echo(verdict_line(result))  # the last line, never wrapped
    sys.exit(result.exit_code)


@main.command()
@click.option("--suite", "suite_name", required=True, help="Suite to bisect.")
@click.option("--good", type=int, default=None, metavar="VERSION",
              help="The last prompt version known good (the baseline of every step).")  # fmt: skip
@click.option("--bad", type=int, default=None, metavar="VERSION",
              help="A later prompt version known worse.")  # fmt: skip
@click.option("--commits", default=None, metavar="A..B",
              help="Bisect commits instead: A the last good, B a bad one; each commit's "
                   "agent and prompts run in a worktree on this checkout's cases.")  # fmt: skip
@click.option("--label", default="production", show_default=True,
              help="With --commits: the prompt label each commit evaluates.")  # fmt: skip
@run_option("--tier", "tier", default="smoke",
            help="The cases each step starts with, before the sequential gate draws more "
                 "(the good end always runs the full suite).")  # fmt: skip
@run_option("--repeat", "repeats")
@run_option("--concurrency", "concurrency", help="Items in flight.")
@run_option("--timeout", "timeout_s")
@run_option("--margin", "margin")
@run_option("--cache", "cache")
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None,
              help="Also write the steps and the outcome as JSON.")  # fmt: skip
def bisect(suite_name: str, good: int | None, bad: int | None, commits: str | None, label: str,
           json_path: Path | None, **options: Any) -> None:  # fmt: skip
    """Find the first prompt version (--good V1 --bad V2) or commit (--commits A..B) that
    made the agent worse: the good end runs the full suite once, then each step is a
    sequential gate against it (the bad end first, then midpoints). Prints each step and
    the first bad with the gate's evidence and the model calls spent; exit 0 found, 2 bad
    input, an error or nothing to bisect, 3 a step the gate could not decide."""
    import dataclasses
    import json

    from eval_pipeline import bisect as bisecting

    versions = good is not None or bad is not None
    if versions == (commits is not None) or (versions and (good is None or bad is None)):
        raise ConfigError("give --good and --bad (two prompt versions) or --commits A..B "
                          "(two commits), not both")  # fmt: skip
    request = RunOptions(**options)

    watch = bisecting.Watch(started=lambda name: click.echo(f"evaluating {name} …", err=True),
                            decided=lambda step: click.echo(step.line()))  # fmt: skip
    try:
        if commits is not None:
            found = bisecting.bisect_commits(suite_name, commits, request, label=label,
                                             watch=watch)  # fmt: skip
        else:
            found = bisecting.bisect_versions(suite_name, good, bad, request, watch=watch)
    except bisecting.BisectError as exc:
        raise ConfigError(str(exc)) from exc
    if json_path:
        body = dataclasses.asdict(found) | {"first_bad": found.first_bad,
                                            "model_calls": found.model_calls,
                                            "exit_code": found.exit_code}  # fmt: skip
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    click.echo(found.final_line())
    sys.exit(found.exit_code)


def _write_files(store, result, json_path, junit_path, report_path) -> None:
    from eval_pipeline.core.reports import charts, exports

    if json_path:
        console.print(f"JSON: {exports.write_json(json_path, result)}")
    if junit_path:
        console.print(f"JUnit: {exports.write_junit(junit_path, result)}")
    if report_path:
        stem = report_path.with_suffix("")
        metric = result.thresholds.primary_metric
        history = store.metric_history(result.run.suite, metric)
        if history:
            points = [charts.TrendPoint(r.started_at, m, se, r.prompt_version)
                      for r, m, se in history]  # fmt: skip
            result.charts["trend"] = charts.trend_chart(points, metric, Path(f"{stem}-trend.png"))
        if result.gate is not None and result.gate.comparable:
            rows = next(c.rows for c in result.gate.checks if c.name == "category_deltas")
            path = Path(f"{stem}-categories.png")
            result.charts["per-category delta"] = charts.category_delta_chart(rows, metric, path)
        console.print(f"Report: {exports.write_markdown(report_path, result)}")


@main.command()
@click.option("--agent", "agent_path", required=True, metavar="PACKAGE.MODULE:ATTRIBUTE|URL",
              help="Your agent: a compiled LangGraph graph, a factory(ctx) returning one, "
                   "fn(input, ctx) -> dict, or the http(s) URL of an agent service.")  # fmt: skip
@click.option("--name", required=True, help="The suite's name (letters, digits, _ and -).")
@click.option("--dataset", "dataset_dir", default=None, metavar="DIR",
              help="Where the cases go, relative to the project file "
                   "(default evals/NAME).")  # fmt: skip
@click.option("--prompt", "prompt_name", default=None,
              help="The prompt in the registry the agent reads (optional).")  # fmt: skip
def init(agent_path: str, name: str, dataset_dir: str | None, prompt_name: str | None) -> None:
    """Declare a suite for your agent: its entry in eval-pipeline.yaml (created if there is
    none), a dataset directory with three example cases and a thresholds file."""
    from eval_pipeline.scaffold import ScaffoldError, scaffold_suite

    try:
        made = scaffold_suite(agent_path, name, dataset_dir=dataset_dir, prompt=prompt_name)
    except ScaffoldError as exc:
        raise ConfigError(str(exc)) from exc
    for path in made.written:
        console.print(f"wrote {path}")
    if made.prompt_note:
        console.print(made.prompt_note)
    console.print(f"Suite {name!r}: {made.agent_kind} {agent_path}. Next: put real cases in "
                  f"{made.cases_file}, then\n  eval-pipeline run --suite {name}")  # fmt: skip


class _progress:
    """A progress bar on a terminal; nothing when output is piped (CI logs stay clean)."""

    def __init__(self, label: str):
        self.label = label
        self.bar = Progress(
            "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=err_console, disable=not err_console.is_terminal,
        )  # fmt: skip

    def __enter__(self):
        self.bar.start()
        task = self.bar.add_task(self.label, total=None)
        return lambda done, total: self.bar.update(task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


@main.group()
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

    from eval_pipeline.agents.project import ProjectError, load_project
    from eval_pipeline.core.cases import DatasetError
    from eval_pipeline.integrations.langfuse_client import LangfuseSettings, describe_error
    from eval_pipeline.integrations.langfuse_datasets import sync_dataset

    langfuse = LangfuseSettings.from_env()
    if langfuse is None:
        raise ConfigError(
            "Langfuse is not configured: set LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY and "
            "LANGFUSE_BASE_URL (nothing was written)"
        )
    try:
        suite = load_project().suite(suite_name)
        cases = suite.load_cases()
        report = sync_dataset(langfuse.client(), suite.name, cases,
                              dry_run=dry_run)  # fmt: skip
    except (ProjectError, DatasetError) as exc:
        raise ConfigError(str(exc)) from exc
    except (ApiError, httpx.HTTPError) as exc:
        reason = describe_error(exc)
        raise ConfigError(redact(f"Langfuse at {langfuse.base_url} failed: {reason}")) from exc
    counts = ", ".join(f"{n} {k}" for k, n in report.counts().items())
    verb = "would sync" if dry_run else "synced"
    console.print(f"{report.dataset} (dataset version {report.dataset_version}): {verb}: {counts}")


@main.group()
def prompts() -> None:
    """The local prompt registry (the project's prompts/ and prompts/labels.yaml)."""


def _prompts_dir() -> Path:
    from eval_pipeline.agents.project import ProjectError, load_project

    try:
        return load_project().prompts_dir
    except ProjectError as exc:
        raise ConfigError(str(exc)) from exc


def _registry():
    from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry

    return LocalPromptRegistry(_prompts_dir())


@contextmanager
def _prompt_errors():
    from eval_pipeline.core.prompts import PromptError

    try:
        yield
    except PromptError as exc:
        raise ConfigError(str(exc)) from exc


@prompts.command("list")
def prompts_list() -> None:
    """Every prompt with its versions and labels."""
    from rich.table import Table

    table = Table(title=f"Prompts in {_prompts_dir()}")
    for column in ("name", "versions", "labels"):
        table.add_column(column)
    with _prompt_errors():
        for name, versions, labels in _registry().list_prompts():
            shown = ", ".join(f"{label} → v{v}" for label, v in sorted(labels.items()))
            table.add_row(name, ", ".join(f"v{v}" for v in versions), shown or "–")
    console.print(table)


@prompts.command("show")
@click.argument("name")
@click.option("--version", type=int, default=None, help="Version (default: --label).")
@click.option("--label", default="production", show_default=True)
def prompts_show(name: str, version: int | None, label: str) -> None:
    """Print one prompt version: labels, content hash, config and text."""
    with _prompt_errors():
        registry = _registry()
        prompt = registry.get(name, version) if version else registry.get_by_label(name, label)
    console.print(
        f"[bold]{prompt.name} v{prompt.version}[/]  type {prompt.type}  hash {prompt.content_hash}"
        f"  labels {', '.join(prompt.labels) or '–'}\nconfig {prompt.config}"
    )
    console.print(prompt.system_text(), markup=False, highlight=False)


@prompts.command("label")
@click.argument("name")
@click.argument("version", type=int)
@click.argument("label")
def prompts_label(name: str, version: int, label: str) -> None:
    """Point LABEL of prompt NAME at VERSION (moves it if it was elsewhere)."""
    with _prompt_errors():
        previous = _registry().set_label(name, version, label)
    moved = f"moved from v{previous}" if previous and previous != version else "set"
    console.print(f"{name}: label {label} → v{version} ({moved})")


@prompts.command("add")
@click.argument("name")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--label", default=None, help="Also point this label at the new version.")
def prompts_add(name: str, source: Path, label: str | None) -> None:
    """Store SOURCE as the next version of NAME (.yaml: type/prompt/config; else text)."""
    from eval_pipeline.integrations.prompt_registry import check_label

    with _prompt_errors():
        if label:
            check_label(label)  # before anything is written
        registry = _registry()
        prompt = registry.add(name, source)
        if label:
            registry.set_label(name, prompt.version, label)
    if label:
        console.print(f"{name}: added v{prompt.version} ({prompt.content_hash}), "
                      f"labelled {label}")  # fmt: skip
        return
    console.print(f"{name}: added v{prompt.version} ({prompt.content_hash}); label it with "
                  f"`eval-pipeline prompts label {name} {prompt.version} staging`")  # fmt: skip


@main.command()
def doctor() -> None:
    """Check configuration, datasets, prompts, the model endpoint, Langfuse and the stores;
    print what is wrong and how to fix it (exit 1 if anything is)."""
    from rich.table import Table

    from eval_pipeline.doctor import run_checks

    findings = run_checks()
    table = Table(title="eval-pipeline doctor")
    for column in ("check", "status", "found", "how to fix"):
        table.add_column(column, overflow="fold")
    for f in findings:
        status = "[yellow]skip[/]" if f.skipped else "[green]ok[/]" if f.ok else "[red]FAIL[/]"
        table.add_row(f.check, status, escape(f.detail), escape(f.fix))
    console.print(table)
    failed = [f.check for f in findings if not f.ok]
    console.print(f"[red]{len(failed)} problem(s): {', '.join(failed)}[/]" if failed
                  else "[green]Everything needed to run evaluations is in place.[/]")  # fmt: skip
    sys.exit(EXIT_FAIL if failed else EXIT_PASS)


@main.group()
def judge() -> None:
    """LLM judges: how far to trust them."""


@judge.command("calibrate")
@click.option("--suite", "suite_name", required=True, help="Suite whose judge to calibrate.")
@click.option("--rubric", required=True, help="The judge's evaluator name in the suite.")
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Labelled set (default: judge_labels.yaml in the suite's dataset).",
)
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None,
              help="Also write the figures as JSON.")  # fmt: skip
def judge_calibrate(suite_name: str, rubric: str, labels_path: Path | None,
                    json_path: Path | None) -> None:  # fmt: skip
    """Compare the judge with people on the suite's labelled set: accuracy and Cohen's
    kappa with a 95% CI, the items they disagree on, the judge's calls and cost. Exit 1
    when kappa is below the suite's floor (thresholds `judges.min_kappa`)."""
    import dataclasses
    import json

    from eval_pipeline.agents.project import ProjectError, load_project
    from eval_pipeline.core.calibration import CalibrationError, calibrate
    from eval_pipeline.core.running.pricing import PriceTable
    from eval_pipeline.report import print_calibration

    try:
        result = calibrate(load_project().suite(suite_name), rubric, labels_path,
                           prices=PriceTable.from_file(settings.prices_file()))  # fmt: skip
    except (ProjectError, CalibrationError) as exc:
        raise ConfigError(str(exc)) from exc
    print_calibration(console, result)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(dataclasses.asdict(result), indent=2))
    sys.exit(1 if result.below_floor else 0)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the names as a JSON list.")
def suites(as_json: bool) -> None:
    """The project's suites: name and dataset directory (relative to the project file),
    one per line; with --json, the names (a CI matrix)."""
    import json

    from eval_pipeline.agents.project import ProjectError, load_project

    try:
        project = load_project()
    except ProjectError as exc:
        raise ConfigError(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(list(project.suite_names)))
        return
    for name in project.suite_names:
        click.echo(f"{name}\t{project.config.suites[name].dataset}")


@main.command()
def instance() -> None:
    """Write the local Dagster instance settings (run queue, one run per partition, model
    pool) to $DAGSTER_HOME (default .eval_home/dagster) and say how to open the UI."""
    from eval_pipeline.defs.instance import write_local_instance

    home = Path(os.environ.get("DAGSTER_HOME") or settings.eval_home() / "dagster")
    path, ours = write_local_instance(home)
    if ours:
        console.print(f"Instance settings: {path}")
    else:
        console.print(f"[yellow]{path} exists and is not ours: left as it is[/] (doctor "
                      "checks that it has a run queue and limits)")  # fmt: skip
    console.print(f"Open the UI: DAGSTER_HOME={home} dagster dev -w workspace.yaml "
                  "(or -m your_package.definitions)")  # fmt: skip


@main.command()
def demo() -> None:
    """Materialize the whole asset graph on embedded defaults and print the summary: the
    project found here (EVAL_PROJECT, or the working directory and its parents), else the
    repository's examples."""
    if settings.fall_back_to_examples() is None:
        console.print(f"[red]No {settings.PROJECT_FILE} here and no examples to run:[/] the "
                      "demo runs the examples of a source checkout (examples/, beside the "
                      "package); clone the repository and install it with pip install -e . "
                      "(or name a project with --project / EVAL_PROJECT)")  # fmt: skip
        sys.exit(2)
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(settings.eval_home() / "dagster")))
    home.mkdir(parents=True, exist_ok=True)
    from eval_pipeline.demo import run_demo

    sys.exit(run_demo(console))


if __name__ == "__main__":
    main()
