"""The production-traces domain: sampled traces, their scores, review candidates."""

from dagster import Definitions, define_asset_job

from eval_pipeline.defs.partitions import Partitions
from eval_pipeline.defs.traces.assets import build_trace_assets
from eval_pipeline.defs.traces.schedules import build_traces_schedule


def build_traces(partitions: Partitions) -> Definitions:
    assets = build_trace_assets(partitions)
    traces_job = define_asset_job("traces_job", selection=assets)
    return Definitions(
        assets=assets, jobs=[traces_job], schedules=[build_traces_schedule(traces_job)]
    )
