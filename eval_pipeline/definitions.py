"""The Dagster code location: every domain's definitions plus the shared resources."""

from dagster import Definitions

from eval_pipeline.defs.evaluation.definitions import defs as evaluation_defs
from eval_pipeline.defs.resources import default_resources

defs = Definitions.merge(evaluation_defs, Definitions(resources=default_resources()))
