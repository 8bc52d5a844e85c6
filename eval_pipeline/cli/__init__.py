"""`eval-pipeline`: the command line. One module per command group (the run command, the
bisection, the demo, the doctor, init, prompts, datasets, judge, suites, instance, runs,
baseline, nightly), each imported only when its command is named; errors become messages and exit
codes in one place (cli/group.py); exit codes are core/errors.py's ``ExitCode``."""

from __future__ import annotations

import os
from pathlib import Path

import click

from eval_pipeline.cli.group import Group

COMMANDS = {
    "run": "eval_pipeline.cli.run:run",
    "bisect": "eval_pipeline.cli.bisect:bisect_command",
    "init": "eval_pipeline.cli.init:init",
    "demo": "eval_pipeline.cli.demo:demo",
    "doctor": "eval_pipeline.cli.doctor:doctor",
    "prompts": "eval_pipeline.cli.prompts:prompts",
    "datasets": "eval_pipeline.cli.datasets:datasets",
    "judge": "eval_pipeline.cli.judge:judge",
    "suites": "eval_pipeline.cli.project:suites",
    "verdicts": "eval_pipeline.cli.verdicts:verdicts",
    "runs": "eval_pipeline.cli.runs:runs",
    "baseline": "eval_pipeline.cli.baseline:baseline",
    "comment": "eval_pipeline.cli.comment:comment",
    "instance": "eval_pipeline.cli.project:instance",
    "nightly": "eval_pipeline.cli.nightly:nightly",
}


@click.group(cls=Group, lazy=COMMANDS)
@click.option("--project", type=click.Path(path_type=Path), default=None,
              help="The project file (default: eval-pipeline.yaml in the working directory or "
                   "a parent; also EVAL_PROJECT).")  # fmt: skip
def main(project: Path | None) -> None:
    """Evaluate LLM agents: golden datasets, scores, summaries and gates."""
    if project is not None:
        os.environ["EVAL_PROJECT"] = str(project.resolve())
