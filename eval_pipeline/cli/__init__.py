"""`eval-pipeline`: the command line. One module per command group (the run command, the
bisection, the demo, the doctor, init, prompts, datasets, judge, suites, instance, runs,
baseline, nightly), each imported only when its command is named; errors become messages and exit
codes in one place (cli/group.py); exit codes are core/errors.py's ``ExitCode``."""

from __future__ import annotations

import os
from pathlib import Path

import click

from eval_pipeline.cli.group import Group

# name → (where the command lives, its line in `eval-pipeline --help`): the list is printed
# from here, so `--help` imports no command module (nor what they import: pandas, scipy,
# SQLAlchemy, LangChain, Dagster); the named command gets this line as its short help.
COMMANDS = {
    "run": ("eval_pipeline.cli.run:run",
            "Run one suite in-process, gate it, report; the verdict last."),
    "bisect": ("eval_pipeline.cli.bisect:bisect_command",
               "The first prompt version or commit that made it worse."),
    "init": ("eval_pipeline.cli.init:init",
             "Declare a suite for your agent: entry, cases, thresholds."),
    "demo": ("eval_pipeline.cli.demo:demo",
             "The whole asset graph on embedded defaults, summarized."),
    "doctor": ("eval_pipeline.cli.doctor:doctor",
               "Check the configuration, endpoint, Langfuse and the stores."),
    "prompts": ("eval_pipeline.cli.prompts:prompts",
                "The prompt registry: Langfuse's, else the project's prompts/."),
    "datasets": ("eval_pipeline.cli.datasets:datasets",
                 "Golden datasets: mirror them into Langfuse."),
    "judge": ("eval_pipeline.cli.judge:judge", "LLM judges: how far to trust them."),
    "suites": ("eval_pipeline.cli.project:suites",
               "The project's suites and their dataset directories."),
    "verdicts": ("eval_pipeline.cli.verdicts:verdicts",
                 "The latest verdict of every suite × prompt version."),
    "runs": ("eval_pipeline.cli.runs:runs",
             "A suite's runs in the results store; retire or restore one."),
    "baseline": ("eval_pipeline.cli.baseline:baseline",
                 "A suite's baseline: the stored run its runs are gated against."),
    "comment": ("eval_pipeline.cli.comment:comment",
                "Post the pull request's comment: each suite's verdict."),
    "instance": ("eval_pipeline.cli.project:instance",
                 "Write the local Dagster instance settings; add partitions."),
    "nightly": ("eval_pipeline.cli.nightly:nightly",
                "Queue the nightly schedule's runs now, through the webserver."),
}


@click.group(cls=Group, lazy=COMMANDS)
@click.option("--project", type=click.Path(path_type=Path), default=None,
              help="The project file (default: eval-pipeline.yaml in the working directory or "
                   "a parent; also EVAL_PROJECT).")  # fmt: skip
def main(project: Path | None) -> None:
    """Evaluate LLM agents: golden datasets, scores, summaries and gates."""
    if project is not None:
        os.environ["EVAL_PROJECT"] = str(project.resolve())
