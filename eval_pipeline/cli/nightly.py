"""`eval-pipeline nightly`: the nightly schedule's runs, queued now."""

from __future__ import annotations

import click

from eval_pipeline.cli.report import console


@click.command()
@click.option(
    "--webserver",
    default="http://127.0.0.1:3000",
    show_default=True,
    help="The deployment's Dagster webserver (its GraphQL API queues the runs).",
)
def nightly(webserver: str) -> None:
    """Queue now the runs the nightly schedule (nightly_full_eval) launches at its hour:
    every suite's production prompt version, full tier, fresh model calls. Run it with the
    daemon's settings (its $DAGSTER_HOME, EVAL_PROJECT, …); the daemon launches the runs
    within the queue's limits."""
    from eval_pipeline.defs.automation.nightly_now import queue_nightly

    queued = queue_nightly(webserver)
    for run in queued:
        console.print(f"{run.partition}: queued, run {run.run_id}")
    console.print(f"{len(queued)} run(s) queued: {webserver}/runs")
