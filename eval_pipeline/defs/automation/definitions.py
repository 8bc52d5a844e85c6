"""The automation domain: nobody has to remember to run evals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dagster import Definitions

from eval_pipeline.defs.automation.run_failures import build_run_failure_sensor
from eval_pipeline.defs.automation.schedules import build_nightly_full_eval
from eval_pipeline.defs.automation.sensors import build_prompt_label_sensor

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )


def build_automation(eval_job: UnresolvedAssetJobDefinition) -> Definitions:
    return Definitions(
        sensors=[build_prompt_label_sensor(eval_job), build_run_failure_sensor(eval_job)],
        schedules=[build_nightly_full_eval(eval_job)],
    )
