"""The evaluation domain: assets, checks (declared on the assets) and jobs."""

from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

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
# The three steps run strictly one after another, so a process per step (the default
# multiprocess executor) buys nothing and costs an interpreter start and a code load per
# step: measured on a drive_thru smoke run, 14.5 s of step execution with a process per
# step vs 1.2 s in the run worker's own process. Pools still limit the llm step.
eval_job = define_asset_job(
    "eval_job", selection=AssetSelection.assets(*EVAL_ASSETS), executor_def=in_process_executor
)

defs = Definitions(
    assets=[golden_dataset, langfuse_dataset, *EVAL_ASSETS],
    jobs=[golden_dataset_job, eval_job],
)
