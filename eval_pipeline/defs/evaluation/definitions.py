"""The evaluation domain: assets, checks (declared on the assets) and jobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dagster import (
    AssetsDefinition,
    AssetSelection,
    Definitions,
    define_asset_job,
)

from eval_pipeline.defs.evaluation.assets import GROUP, EvaluationAssets, build_evaluation_assets
from eval_pipeline.defs.evaluation.execution import eval_executor
from eval_pipeline.defs.evaluation.failure_rerun import build_failure_rerun
from eval_pipeline.defs.evaluation.judges import build_judge_calibration
from eval_pipeline.defs.partitions import Partitions

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )


@dataclass(frozen=True)
class EvaluationDefs:
    assets: EvaluationAssets
    judge_calibration: AssetsDefinition
    failure_rerun: AssetsDefinition
    eval_job: UnresolvedAssetJobDefinition
    golden_dataset_job: UnresolvedAssetJobDefinition

    def definitions(self) -> Definitions:
        a = self.assets
        return Definitions(
            assets=[
                a.golden_dataset,
                a.langfuse_dataset,
                self.judge_calibration,
                *a.evaluation,
                self.failure_rerun,
            ],
            jobs=[self.golden_dataset_job, self.eval_job],
        )


def build_evaluation(partitions: Partitions) -> EvaluationDefs:
    assets = build_evaluation_assets(partitions)
    judge_calibration = build_judge_calibration(partitions, GROUP)
    failure_rerun = build_failure_rerun(partitions, GROUP)
    # One job per partitions definition: Dagster refuses jobs that mix them.
    golden_dataset_job = define_asset_job(
        "golden_dataset_job",
        selection=AssetSelection.assets(
            assets.golden_dataset, assets.langfuse_dataset, judge_calibration
        ),
    )
    # In one process unless the run has several shards (execution.py): a process per step
    # costs an interpreter start and a code load per step (a drive_thru smoke run: 14.5 s
    # of step execution with a process per step vs 1.2 s in the run worker's own process).
    eval_job = define_asset_job(
        "eval_job",
        selection=AssetSelection.assets(*assets.evaluation, failure_rerun),
        executor_def=eval_executor(),
    )
    return EvaluationDefs(assets, judge_calibration, failure_rerun, eval_job, golden_dataset_job)
