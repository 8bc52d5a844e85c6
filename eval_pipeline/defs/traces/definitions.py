"""The production-traces domain: sampled traces, their scores, review candidates."""

from dagster import Definitions

from eval_pipeline.defs.traces.assets import golden_candidates, production_traces, trace_scores
from eval_pipeline.defs.traces.schedules import production_traces_daily, traces_job

defs = Definitions(
    assets=[production_traces, trace_scores, golden_candidates],
    jobs=[traces_job],
    schedules=[production_traces_daily],
)
