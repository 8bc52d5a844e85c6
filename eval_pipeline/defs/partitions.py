"""Partitions: suites are static, prompt versions dynamic (added by the sensor or CLI)."""

from dagster import (
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
)

from eval_pipeline.agents.registry import SUITE_NAMES

suite_partitions = StaticPartitionsDefinition(list(SUITE_NAMES))
prompt_version_partitions = DynamicPartitionsDefinition(name="prompt_version")
eval_partitions = MultiPartitionsDefinition(
    {"suite": suite_partitions, "prompt_version": prompt_version_partitions}
)

# Production traces: one partition per UTC day and suite.
day_partitions = DailyPartitionsDefinition(start_date="2026-11-01", timezone="UTC")
trace_partitions = MultiPartitionsDefinition({"day": day_partitions, "suite": suite_partitions})
