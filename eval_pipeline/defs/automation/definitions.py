"""The automation domain: nobody has to remember to run evals."""

from dagster import Definitions

from eval_pipeline.defs.automation.schedules import nightly_full_eval
from eval_pipeline.defs.automation.sensors import prompt_label_sensor

defs = Definitions(sensors=[prompt_label_sensor], schedules=[nightly_full_eval])
