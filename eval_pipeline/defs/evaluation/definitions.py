"""The evaluation domain: assets, checks (declared on the assets) and jobs."""

from dagster import AssetSelection, Definitions, define_asset_job

from eval_pipeline.defs.evaluation.assets import (
    agent_run_outputs,
    eval_summary,
    golden_dataset,
    item_scores,
    langfuse_dataset,
)

EVAL_ASSETS = [agent_run_outputs, item_scores, eval_summary]

# One job per partitions definition: Dagster refuses jobs that mix them.
golden_dataset_job = define_asset_job(
    "golden_dataset_job",
    selection=AssetSelection.assets(golden_dataset, langfuse_dataset),
)
eval_job = define_asset_job("eval_job", selection=AssetSelection.assets(*EVAL_ASSETS))

defs = Definitions(
    assets=[golden_dataset, langfuse_dataset, *EVAL_ASSETS],
    jobs=[golden_dataset_job, eval_job],
)
