"""The Dagster code location: every domain's definitions plus the shared resources."""

from dagster import Definitions

from eval_pipeline.defs import resources
from eval_pipeline.defs.automation import definitions as automation
from eval_pipeline.defs.evaluation import definitions as evaluation
from eval_pipeline.defs.traces import definitions as traces

# Only one Definitions object may live at module scope: domains are imported as modules.
defs = Definitions.merge(
    evaluation.defs,
    automation.defs,
    traces.defs,
    Definitions(resources=resources.default_resources()),
)
