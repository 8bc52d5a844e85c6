"""`eval-pipeline baseline`: a suite's baseline — which run it is and why (show), pinned to
a run (set), chosen again as every run chooses it (unset). Kept in the results store as
history (service/baselines.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from eval_pipeline.core.evaluation.baseline import Chosen, NoBaseline
    from eval_pipeline.service.baselines import Shown

LABEL_HELP = "The baseline label (default: the suite's regression.baseline_label, production)."


@click.group()
def baseline() -> None:
    """A suite's baseline: the stored run its runs are gated against."""


def describe(chosen: Chosen | NoBaseline) -> list[str]:
    """The lines that say a choice: the run and why, or why there is none and what to do;
    then the runs passed over."""
    from eval_pipeline.core.evaluation.baseline import NoBaseline

    if isinstance(chosen, NoBaseline):
        lines = [f"none: {chosen.why}"] + ([f"do: {chosen.fix}"] if chosen.fix else [])
    else:
        run = chosen.run
        lines = [f"run {run.run_id} ({run.prompt_version}, {run.tier}, started "
                 f"{run.started_at:%Y-%m-%d %H:%M} UTC)", f"why: {chosen.why}"]  # fmt: skip
    lines += [f"passed over: {p.run.run_id}: {p.why}" for p in chosen.passed_over]
    return lines


def print_shown(shown: Shown) -> None:
    from eval_pipeline.core.evaluation.baseline import Chosen

    chosen = shown.chosen
    head, *rest = describe(chosen)
    click.echo(f"{shown.suite}'s {shown.label} baseline: {head}")
    for line in rest:
        click.echo(f"  {line}")
    if shown.dataset_now is None:
        click.echo(f"  the suite's cases could not be read: {shown.cases_problem}")
    elif isinstance(chosen, Chosen) and chosen.run.dataset_version != shown.dataset_now:
        click.echo(
            f"  not comparable with the suite's cases now (dataset {shown.dataset_now}, the "
            f"baseline's {chosen.run.dataset_version}): a run of another version is \"not "
            f"comparable: dataset changed\"; run the baseline's version on the current cases "
            f"(`eval-pipeline run --suite {shown.suite} --label {shown.label}`): the first run "
            "on them becomes the baseline"
            + ("" if chosen.pin is None else
               f", once the pin is removed (`eval-pipeline baseline unset --suite {shown.suite}`)")
        )  # fmt: skip
    elif isinstance(chosen, Chosen):
        click.echo(f"  comparable with the suite's cases now (dataset {shown.dataset_now})")


@baseline.command("show")
@click.option("--suite", "suite", required=True, help="The suite.")
@click.option("--label", default=None, help=LABEL_HELP)
def baseline_show(suite: str, label: str | None) -> None:
    """The run the suite's next run (of another version than the label's) is gated
    against, why it was chosen, the runs passed over, and whether it is comparable with
    the suite's cases now."""
    from eval_pipeline.service import baselines
    from eval_pipeline.service.environment import Environment

    print_shown(baselines.show(Environment.from_env(), suite, label))


@baseline.command("set")
@click.argument("run_id")
@click.option("--label", default=None, help=LABEL_HELP)
@click.option("--why", required=True, help="Why (kept in the store's history).")
def baseline_set(run_id: str, label: str | None, why: str) -> None:
    """Pin RUN_ID as its suite's baseline: every run gated against the label uses it, until
    `eval-pipeline baseline unset`. It must be a complete full-tier run."""
    from eval_pipeline.service import baselines
    from eval_pipeline.service.environment import Environment

    change = baselines.pin(Environment.from_env(), run_id, label, why)
    click.echo(f"{change.suite}'s {change.label} baseline is run {run_id}: {change.line()}; "
               f"`eval-pipeline baseline unset --suite {change.suite}` undoes it")  # fmt: skip


@baseline.command("unset")
@click.option("--suite", "suite", required=True, help="The suite.")
@click.option("--label", default=None, help=LABEL_HELP)
@click.option("--why", default="no reason given", help="Why (kept in the store's history).")
def baseline_unset(suite: str, label: str | None, why: str) -> None:
    """Remove the suite's pinned baseline: it is chosen again as every run chooses it (the
    latest complete full-tier run of the label's version)."""
    from eval_pipeline.service import baselines
    from eval_pipeline.service.environment import Environment

    env = Environment.from_env()
    change = baselines.unpin(env, suite, label, why)
    click.echo(f"{suite}'s {change.label} baseline is no longer pinned to run "
               f"{change.run_id}: {change.line()}")  # fmt: skip
    print_shown(baselines.show(env, suite, change.label))
