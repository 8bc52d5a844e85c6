"""`eval-pipeline verdicts`: which suite and version passed, from the results store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table

from eval_pipeline.cli.report import console

if TYPE_CHECKING:
    from eval_pipeline.core.reports.verdict_table import VerdictRow

COLUMNS = ("suite", "version", "tier", "verdict", "metric", "Δ", "interval", "decided", "run",
           "finished")  # fmt: skip


@click.command()
@click.option("--suite", default=None, help="Only this suite.")
def verdicts(suite: str | None) -> None:
    """The latest verdict of every suite × prompt version: PASS, FAIL, UNDECIDED or ERROR,
    the metric that backs it with its Δ against the baseline and interval, after how many cases a
    sequential gate decided, and the run. A table when the terminal is wide enough for it,
    else one block per suite and version."""
    from eval_pipeline import settings
    from eval_pipeline.core.reports.verdict_table import latest_verdicts
    from eval_pipeline.core.util.redact import redact
    from eval_pipeline.service.environment import open_store

    rows = latest_verdicts(open_store(settings.results_url()), suite)
    where = redact(settings.results_url())
    if not rows:
        console.print(f"No settled runs{f' of {suite}' if suite else ''} in {where}: "
                      "run `eval-pipeline run --suite NAME` first.")  # fmt: skip
        return
    title = f"Latest verdict per suite and version ({where})"
    table = verdicts_table(rows, title)
    unbounded = console.options.update_width(10_000)
    if Measurement.get(console, unbounded, table).maximum <= console.width:
        console.print(table)
    else:  # a table this narrow folds every cell into shreds: the same fields, stacked
        print_stacked(rows, title)


def verdict_text(row: VerdictRow) -> str:
    from eval_pipeline.core.store.records import Verdict

    colour = {Verdict.PASS: "green", Verdict.FAIL: "red", Verdict.UNDECIDED: "yellow",
              Verdict.ERROR: "red"}  # fmt: skip
    said = row.said
    return f"[{colour[said.verdict]}]{said.verdict}[/]" + (
        f" {escape(said.reason[:60])}" if said.reason else "")  # fmt: skip


def verdicts_table(rows: Sequence[VerdictRow], title: str) -> Table:
    table = Table(title=title)
    for name in COLUMNS:
        table.add_column(name, justify="right" if name == "Δ" else "left", overflow="fold")
    for row in rows:
        run, said = row.run, row.said
        table.add_row(escape(run.suite), run.prompt_version, run.tier, verdict_text(row),
                      escape(said.metric or "–"), said.delta_text, said.interval_text,
                      escape(row.decided), run.run_id, row.when)  # fmt: skip
    return table


def print_stacked(rows: Sequence[VerdictRow], title: str) -> None:
    """Per suite and version: its verdict on one line, then what backs it (metric, Δ,
    interval, when a sequential gate decided) and the run, indented; lines with nothing to
    say (a run without a gate) are left out."""
    console.print(f"[italic]{escape(title)}[/]")
    suite = None
    for row in rows:
        run, said = row.run, row.said
        if run.suite != suite:
            console.print(f"\n[bold]{escape(run.suite)}[/]")
            suite = run.suite
        console.print(Padding(f"{run.prompt_version} ({run.tier}): {verdict_text(row)}",
                              (0, 0, 0, 2), expand=False))  # fmt: skip
        said_more = []
        if said.metric:
            said_more.append(f"{escape(said.metric)} Δ {said.delta_text} {said.interval_text}")
        if said.decided_after:
            said_more.append(escape(said.decided_after))
        said_more.append(f"run {run.run_id}, finished {row.when}")
        for line in said_more:
            console.print(Padding(line, (0, 0, 0, 4), expand=False))
