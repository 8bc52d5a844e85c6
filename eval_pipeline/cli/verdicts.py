"""`eval-pipeline verdicts`: which suite and version passed, from the results store."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from eval_pipeline.cli.report import console


@click.command()
@click.option("--suite", default=None, help="Only this suite.")
def verdicts(suite: str | None) -> None:
    """The latest verdict of every suite × prompt version: PASS, FAIL, UNDECIDED or ERROR,
    the metric that backs it with its Δ against the baseline and interval, after how many cases a
    sequential gate decided, and the run."""
    from eval_pipeline import settings
    from eval_pipeline.core.reports.verdict_table import latest_verdicts
    from eval_pipeline.core.store.records import Verdict
    from eval_pipeline.core.util.redact import redact
    from eval_pipeline.service.environment import open_store

    rows = latest_verdicts(open_store(settings.results_url()), suite)
    where = redact(settings.results_url())
    if not rows:
        console.print(f"No settled runs{f' of {suite}' if suite else ''} in {where}: "
                      "run `eval-pipeline run --suite NAME` first.")  # fmt: skip
        return
    table = Table(title=f"Latest verdict per suite and version ({where})")
    for name in ("suite", "version", "tier", "verdict", "metric", "Δ", "interval", "decided",
                 "run", "finished"):  # fmt: skip
        table.add_column(name, justify="right" if name == "Δ" else "left", overflow="fold")
    colour = {Verdict.PASS: "green", Verdict.FAIL: "red", Verdict.UNDECIDED: "yellow",
              Verdict.ERROR: "red"}  # fmt: skip
    for row in rows:
        said = row.said
        verdict = f"[{colour[said.verdict]}]{said.verdict}[/]" + (
            f" {escape(said.reason[:60])}" if said.reason else "")  # fmt: skip
        run = row.run
        table.add_row(escape(run.suite), run.prompt_version, run.tier, verdict,
                      escape(said.metric or "–"), said.delta_text, said.interval_text,
                      escape(row.decided), run.run_id, row.when)  # fmt: skip
    console.print(table)
