"""Partitions: an evaluation is one suite at one prompt version (``drive_thru/v3``: one
dynamic partition, added by the sensor, the schedules, the CLI or the demo only for the
versions a suite's prompt has); suites are static (the project's); production traces per
UTC day × suite.

Why not suite × version as two dimensions: Dagster 1.13 multi-partitions are the cross
product of their dimensions, so a version added for one suite's prompt made a partition
for every suite ("Missing" partitions that match no prompt version), and it has no
dependent dimension. See docs/dagster.md ("Partitions") for how an instance made with the
old two dimensions is moved over (``eval-pipeline instance``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetCheckSpec,
    DagsterInstance,
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    FloatMetadataValue,
    IntMetadataValue,
    MultiPartitionsDefinition,
    PartitionsDefinition,
    PreviewWarning,
    StaticPartitionsDefinition,
)

from eval_pipeline.core.errors import ConfigurationError

EVALUATION_PARTITIONS = "suite_version"  # the name of the dynamic partitions below
evaluation_partitions = DynamicPartitionsDefinition(name=EVALUATION_PARTITIONS)
day_partitions = DailyPartitionsDefinition(start_date="2026-11-01", timezone="UTC")
SEPARATOR = "/"  # suite names cannot hold it (agents/project/schema.py SUITE_NAME)
OLD_VERSIONS = "prompt_version"  # the version dimension of instances made before this


@dataclass(frozen=True)
class EvalPartition:
    """One suite at one prompt version: the partition of every evaluation asset."""

    suite: str
    version: str

    @property
    def key(self) -> str:
        return f"{self.suite}{SEPARATOR}{self.version}"

    @classmethod
    def parse(cls, key: str) -> EvalPartition:
        suite, sep, version = key.partition(SEPARATOR)
        if not sep or not suite or not version:
            raise ConfigurationError(f"not an evaluation partition: {key!r} "
                                     "(expected suite/version)")  # fmt: skip
        return cls(suite, version)

    def __str__(self) -> str:
        return self.key


def missing_partitions(instance: DagsterInstance, partitions: Sequence[EvalPartition]) -> list[str]:
    """Keys of ``partitions`` the instance does not have yet (sorted, each once)."""
    keys = {p.key for p in partitions}
    return sorted(k for k in keys if not instance.has_dynamic_partition(EVALUATION_PARTITIONS, k))


def add_partitions(instance: DagsterInstance, partitions: Sequence[EvalPartition]) -> list[str]:
    """Add the evaluation partitions the instance lacks; the keys added."""
    new = missing_partitions(instance, partitions)
    if new:
        instance.add_dynamic_partitions(EVALUATION_PARTITIONS, new)
    return new


@dataclass(frozen=True)
class Migration:
    added: list[str]  # suite/version partitions added
    dropped: list[str]  # old prompt_version partitions removed


def migrate_partitions(instance: DagsterInstance, evaluated: Sequence[EvalPartition],
                       suites: Sequence[str]) -> Migration:  # fmt: skip
    """Move an instance made with suite × prompt_version partitions to suite/version: a
    partition for every suite × version of ``suites`` that was evaluated (``evaluated``,
    from the results store) or materialized under the old keys ("v2|drive_thru"), then the
    old version dimension removed. The old keys' materializations and runs stay in the
    instance's history (Dagster does not re-key events); the next run of a version shows on
    its new partition. Idempotent."""
    from dagster import AssetKey

    found = list(evaluated)
    for asset in ("agent_run_outputs", "item_scores", "eval_summary", "failure_rerun"):
        for key in instance.get_materialized_partitions(AssetKey(asset)):
            version, sep, suite = key.partition("|")
            if sep:
                found.append(EvalPartition(suite, version))
    added = add_partitions(instance, [p for p in found if p.suite in suites])
    dropped = list(instance.get_dynamic_partitions(OLD_VERSIONS))
    for key in dropped:
        instance.delete_dynamic_partition(OLD_VERSIONS, key)
    return Migration(added, dropped)


def register_version(partition: EvalPartition, home: str) -> str | None:
    """Add ``partition`` to the Dagster instance at ``home`` (the configured $DAGSTER_HOME),
    so a version evaluated from the CLI can be materialized and its checks read there;
    None when done, else why not."""
    try:
        with DagsterInstance.get() as instance:
            add_partitions(instance, [partition])
    except Exception as exc:  # the run stands; the partition can be added later
        return (
            f"could not add partition {partition} to the Dagster instance at {home} "
            f"({type(exc).__name__}: {exc}); the label sensor adds it on its next tick"
        )
    return None


@dataclass(frozen=True)
class Partitions:
    suite_names: tuple[str, ...]
    suites: StaticPartitionsDefinition
    evals: DynamicPartitionsDefinition  # suite/version, only where the version exists
    traces: MultiPartitionsDefinition  # day × suite


def build_partitions(suite_names: Sequence[str]) -> Partitions:
    suites = StaticPartitionsDefinition(list(suite_names))
    return Partitions(
        suite_names=tuple(suite_names),
        suites=suites,
        evals=evaluation_partitions,
        traces=MultiPartitionsDefinition({"day": day_partitions, "suite": suites}),
    )


def plotted_per_suite(suite: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` with each number under ``<suite>.<key>`` (``drive_thru.primary_value``).

    Dagster plots every numeric metadata key of an asset with the partitions along the
    x-axis, one line per key: under plain keys drive_thru/v2's value was joined to
    research/v1's in one line. Keyed by suite, each plot is one suite's values over its
    versions (or days). Text, tables and flags keep their keys."""
    return {f"{suite}.{key}" if _plotted(value) else key: value for key, value in metadata.items()}


def unplotted(suite: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` read back with each of ``suite``'s numbers under its own name again
    (the inverse of ``plotted_per_suite``)."""
    return {key.removeprefix(f"{suite}."): value for key, value in metadata.items()}


def _plotted(value: Any) -> bool:
    if isinstance(value, FloatMetadataValue | IntMetadataValue):
        return True
    return isinstance(value, int | float) and not isinstance(value, bool)


def partitioned_check(
    name: str,
    asset: str,
    description: str,
    partitions_def: PartitionsDefinition,
    blocking: bool = False,
) -> AssetCheckSpec:
    """A check whose results belong to one partition, so the UI says which suite × version
    (or day × suite) they are about. Dagster 1.13 calls this "preview" and warns on every
    load; the feature is what we need, so the warning is silenced here and only here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        return AssetCheckSpec(
            name,
            asset=asset,
            description=description,
            blocking=blocking,
            partitions_def=partitions_def,
        )
