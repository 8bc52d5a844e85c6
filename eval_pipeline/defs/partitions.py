"""Partitions: suites are static, prompt versions dynamic (added by the sensor or CLI)."""

from dagster import (
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
