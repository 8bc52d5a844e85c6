"""`eval-pipeline suites` (the project's suites) and `eval-pipeline instance` (the local
Dagster instance's settings)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from eval_pipeline import settings
from eval_pipeline.cli.report import console

if TYPE_CHECKING:
    from eval_pipeline.defs.partitions import Migration


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the names as a JSON list.")
def suites(as_json: bool) -> None:
    """The project's suites: name and dataset directory (relative to the project file),
    one per line; with --json, the names (a CI matrix)."""
    from eval_pipeline.agents.project import load_project

    project = load_project()
    if as_json:
        click.echo(json.dumps(list(project.suite_names)))
        return
    for name in project.suite_names:
        click.echo(f"{name}\t{project.config.suites[name].dataset}")


@click.command()
def instance() -> None:
    """Write the local Dagster instance settings (run queue, one run per partition, model
    pool) to $DAGSTER_HOME (default .eval_home/dagster), add an evaluation partition
    (suite/version) for every suite × version the results store has run (moving an
    instance made with the earlier suite × prompt_version partitions) and say how to open
    the UI."""
    from eval_pipeline.defs.instance import write_local_instance

    home = Path(os.environ.get("DAGSTER_HOME") or settings.eval_home() / "dagster")
    path, ours = write_local_instance(home)
    if ours:
        console.print(f"Instance settings: {path}")
    else:
        console.print(f"[yellow]{path} exists and is not ours: left as it is[/] (doctor "
                      "checks that it has a run queue and limits)")  # fmt: skip
    moved = _migrate_partitions(home)
    if moved.added or moved.dropped:
        console.print(f"Partitions: added {len(moved.added)} suite/version partitions"
                      + (f" ({', '.join(moved.added)})" if moved.added else "")
                      + (f"; removed the old prompt_version dimension ({len(moved.dropped)} "
                         "keys)" if moved.dropped else ""))  # fmt: skip
    if Path("workspace.yaml").is_file():
        console.print(f"Open the UI: DAGSTER_HOME={home} dagster dev -w workspace.yaml")
    else:
        console.print(f"Open the UI: DAGSTER_HOME={home} dagster dev -m "
                      "<your_package>.definitions, a module of one line: `defs = "
                      "build_definitions(__file__)` (docs/dagster.md, Your own code "
                      "location)")  # fmt: skip


def _migrate_partitions(home: Path) -> Migration:
    """An evaluation partition for every suite × version the results store has run (and the
    old suite × prompt_version keys moved: defs/partitions.py)."""
    from dagster import DagsterInstance

    from eval_pipeline.agents.project import load_project
    from eval_pipeline.defs.partitions import EvalPartition, migrate_partitions
    from eval_pipeline.service.environment import open_store

    evaluated = [EvalPartition(s, v) for s, v in open_store(settings.results_url()).evaluated()]
    with DagsterInstance.from_config(str(home)) as instance:
        return migrate_partitions(instance, evaluated, load_project().suite_names)
