"""`eval-pipeline run`: one suite in this process, gated, reported; the last line is the
verdict and the exit code says it (0 pass, 1 fail, 2 error, 3 undecided)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from eval_pipeline.cli.group import says_verdict
from eval_pipeline.cli.report import console, err_console, print_result, verdict_line
from eval_pipeline.cli.run_flags import run_option
from eval_pipeline.core.errors import ConfigurationError, ServiceError, explanation_failed
from eval_pipeline.core.options import run_options
from eval_pipeline.core.util.redact import redact

if TYPE_CHECKING:
    from eval_pipeline.service.run import Recording


@click.command()
@click.option("--suite", "suite_name", required=True, help="Suite to run (see the project file).")
@run_option("tier")
@run_option("repeats")
@run_option("concurrency", help="Items in flight, in all (split over --workers).")
@run_option(
    "shards",
    help="Processes the items are split over, sharing "
    "--concurrency and one memo (one core runs ~250 model calls/s; see BENCHMARKS.md).",
)
@run_option("timeout_s")
@click.option("--label", default="production", show_default=True,
              help="Prompt label to evaluate (ignored with --prompt-version).")  # fmt: skip
@click.option("--prompt-version", type=int, default=None, help="Prompt version to evaluate.")
@run_option("baseline_label", metavar="LABEL")
@run_option("baseline_run_id", metavar="RUN_ID")
@run_option("margin")
@run_option("min_primary")
@run_option("cache")
@run_option("gate")
@run_option("sequential_until")
@run_option("on_undecided")
@run_option("max_repeats", metavar="R")
@run_option("max_calls", metavar="N")
@run_option("max_tokens", metavar="N")
@run_option("max_cost", metavar="DOLLARS")
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
@click.pass_context
def run(
    ctx: click.Context,
    suite_name: str,
    label: str,
    prompt_version: int | None,
    recording: Recording | None,
    json_path: Path | None,
    junit_path: Path | None,
    report_path: Path | None,
    verbose: bool,
    **options: Any,
) -> None:
    """Run one suite in-process, gate it, print the report; exit 0 pass, 1 fail, 2 error,
    3 undecided (0 with --on-undecided warn). The last line is the verdict."""
    from rich.markup import escape

    from eval_pipeline import api, settings

    says_verdict(ctx)
    for flag, path in (("--json", json_path), ("--junit", junit_path), ("--report", report_path)):
        writable(flag, path)  # before the run: a run stored, then no file, helps nobody
    request = run_options(**options)
    prepared = api.prepare(suite_name, prompt_version=prompt_version, label=label,
                           request=request, recording=recording or "off")  # fmt: skip
    with _progress(f"{suite_name} {request.tier}") as report:
        result = api.run_prepared(prepared, progress=report)
    if problem := register_partition(result.run.suite, result.run.prompt_version):
        result.warnings.append(problem)
    print_result(console, result, verbose=verbose)
    for why in result.errors:  # whole, on stderr; the verdict line below has the first
        click.echo(f"Error: {why}", err=True)
    unwritten = _write_files(prepared.store, result, json_path, junit_path, report_path)
    if result.langfuse:
        console.print(f"Langfuse: {escape(result.langfuse)}", highlight=False, soft_wrap=True)
    console.print(f"Results store: {redact(settings.results_url())}  (run {result.run.run_id})")
    click.echo(verdict_line(result))  # the last line, never wrapped
    if unwritten:  # the run is stored and its verdict printed; CI must not read 0 or 1
        raise ServiceError(
            "; ".join(unwritten) + f" — the run itself is stored (run {result.run.run_id}) "
            "and its verdict is the line above; free the space or name another file"
        )
    sys.exit(result.exit_code)


def register_partition(suite: str, version: str) -> str | None:
    """With a Dagster instance configured ($DAGSTER_HOME), the suite/version the CLI
    evaluated becomes a partition there (docs/dagster.md; Dagster is imported only then: it
    costs a second). Here, not in the API: ``evaluate()`` never reaches into Dagster.
    None when done or not configured, else why not."""
    home = os.environ.get("DAGSTER_HOME")
    if not home or not Path(home).is_dir():
        return None
    from eval_pipeline.defs.partitions import EvalPartition, register_version

    return register_version(EvalPartition(suite, version), home)


def writable(flag: str, path: Path | None) -> None:
    """Refuse an output file that cannot be written (a directory, a folder that cannot be
    made or written), naming the flag and the path."""
    if path is None:
        return
    if path.is_dir():
        raise ConfigurationError(f"{flag} {path}: is a directory; name a file in it")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
        if not existed:
            path.unlink()  # (made to try: the run writes it)
    except OSError as exc:
        raise ConfigurationError(
            f"{flag} {path}: cannot be written ({exc.strerror or exc}); "
            "name a file in a folder you can write to"
        ) from None


def _write_files(store, result, json_path, junit_path, report_path) -> list[str]:
    """Write the files asked for; what could not be written (a full disk, /dev/full), one
    line each naming the flag, the file and the OS error."""
    from eval_pipeline.core.reports import exports
    from eval_pipeline.core.reports.result_file import ResultFile

    view = ResultFile.of(result)  # what every file renders
    unwritten: list[str] = []

    def write(flag: str, label: str, path: Path, render: Any) -> None:
        try:
            console.print(f"{label}: {render()}")
        except OSError as exc:  # (checked writable before the run; a disk can still fill)
            unwritten.append(f"{flag} {path}: cannot be written ({exc.strerror or exc})")

    if json_path:
        write("--json", "JSON", json_path, lambda: exports.write_json(json_path, view))
    if junit_path:
        write("--junit", "JUnit", junit_path, lambda: exports.write_junit(junit_path, view))
    if report_path:
        from eval_pipeline.core.reports import charts  # (matplotlib: ~0.8 s CPU, for --report)

        try:
            result.charts |= charts.run_charts(store, result, report_path.with_suffix("")).files
        except Exception as exc:  # (a chart explains a verdict, never decides it)
            result.warnings.append(explanation_failed("the report's charts", exc))
            click.echo(f"Warning: {result.warnings[-1]}", err=True)
        write("--report", "Report", report_path,
              lambda: exports.write_markdown(report_path, view, result.charts))  # fmt: skip
    return unwritten


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
