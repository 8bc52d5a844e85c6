"""`eval-pipeline judge calibrate`: how far to trust an LLM judge."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from eval_pipeline import settings
from eval_pipeline.cli.report import console, print_calibration
from eval_pipeline.core.errors import ExitCode


@click.group()
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

    from eval_pipeline.agents.project import load_project
    from eval_pipeline.core.analysis.calibration import calibrate
    from eval_pipeline.core.running.pricing import PriceTable

    result = calibrate(load_project().suite(suite_name), rubric, labels_path,
                       prices=PriceTable.from_file(settings.prices_file()))  # fmt: skip
    print_calibration(console, result)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(dataclasses.asdict(result), indent=2))
    sys.exit(ExitCode.FAIL if result.below_floor else ExitCode.PASS)
