"""The evaluation domain: assets, checks (declared on the assets) and jobs."""

from dagster import AssetSelection, Definitions, define_asset_job

from eval_pipeline.defs.evaluation.assets import (
    agent_run_outputs,
    eval_summary,
    golden_dataset,
    item_scores,
)
from eval_pipeline.defs.partitions import eval_partitions, suite_partitions

EVAL_ASSETS = [agent_run_outputs, item_scores, eval_summary]

# One job per partitions definition: Dagster refuses jobs that mix them.
golden_dataset_job = define_asset_job(
    "golden_dataset_job",
    selection=AssetSelection.assets(golden_dataset),
    partitions_def=suite_partitions,
)
eval_job = define_asset_job(
    "eval_job", selection=AssetSelection.assets(*EVAL_ASSETS), partitions_def=eval_partitions
)

defs = Definitions(
    assets=[golden_dataset, *EVAL_ASSETS],
    jobs=[golden_dataset_job, eval_job],
)
