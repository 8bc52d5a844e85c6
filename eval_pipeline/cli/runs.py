"""`eval-pipeline runs`: a suite's runs in the results store (list), and runs retired so
that none is ever chosen as a baseline (retire, restore). Nothing is deleted: every change
is kept as history (service/baselines.py)."""

from __future__ import annotations

import click


@click.group()
def runs() -> None:
    """A suite's runs in the results store, and retired runs (never a baseline)."""


@runs.command("list")
@click.option("--suite", "suite", required=True, help="The suite.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1),
              help="The latest runs shown.")  # fmt: skip
def runs_list(suite: str, limit: int) -> None:
    """The suite's latest runs, newest first, retired ones included: id, prompt version and
    its labels, tier, status, which is the baseline; when it started, its verdict, its items
    and how many failed; why a run is retired or never a baseline."""
    from eval_pipeline.core.store.database import masked
    from eval_pipeline.service import baselines
    from eval_pipeline.service.environment import Environment

    env = Environment.from_env()
    rows = baselines.list_runs(env, suite, limit)
    where = masked(env.store_url)
    if not rows:
        click.echo(f"No runs of {suite} in {where}: run `eval-pipeline run --suite {suite}` "
                   "first.")  # fmt: skip
        return
    click.echo(f"Runs of {suite} in {where}, newest first ({len(rows)}):")
    for row in rows:
        run = row.run
        labels = f" {','.join(row.labels)}" if row.labels else ""
        mark = f"  ← {row.baseline}" if row.baseline else ""
        click.echo(f"{run.run_id}  {run.prompt_version}{labels}  {run.tier}  {run.status}{mark}")
        said = "no verdict"
        if row.verdict is not None:
            reason = row.verdict.reason
            said = f"{row.verdict.verdict}" + (f": {reason[:60]}" if reason else "")
        items = "no summary" if row.items is None else f"{row.items} items, {row.failed} failed"
        click.echo(f"    started {run.started_at:%Y-%m-%d %H:%M} UTC · {said} · {items}")
        if row.why:
            click.echo(f"    {row.why}")


@runs.command("retire")
@click.argument("run_id")
@click.option("--why", required=True, help="Why (kept in the store's history).")
def runs_retire(run_id: str, why: str) -> None:
    """Never choose RUN_ID as a baseline (it stays in the store; `eval-pipeline runs
    restore` brings it back)."""
    from eval_pipeline.cli.baseline import print_shown
    from eval_pipeline.service import baselines
    from eval_pipeline.service.environment import Environment

    env = Environment.from_env()
    change = baselines.retire(env, run_id, why)
    click.echo(f"run {run_id} of {change.suite}: {change.line()}; never chosen as a baseline "
               f"(`eval-pipeline runs restore {run_id}` undoes it)")  # fmt: skip
    if change.suite in env.project.suite_names:
        print_shown(baselines.show(env, change.suite, None))


@runs.command("restore")
@click.argument("run_id")
@click.option("--why", default="no reason given", help="Why (kept in the store's history).")
def runs_restore(run_id: str, why: str) -> None:
    """Undo `eval-pipeline runs retire`: RUN_ID may be chosen as a baseline again."""
    from eval_pipeline.cli.baseline import print_shown
    from eval_pipeline.service import baselines
    from eval_pipeline.service.environment import Environment

    env = Environment.from_env()
    change = baselines.restore(env, run_id, why)
    click.echo(f"run {run_id} of {change.suite}: {change.line()}")
    if change.suite in env.project.suite_names:
        print_shown(baselines.show(env, change.suite, None))
