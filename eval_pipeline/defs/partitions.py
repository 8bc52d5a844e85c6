"""Partitions: suites are static (the project's), prompt versions dynamic (added by the
sensor, the schedules or the demo), production traces per UTC day."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from dagster import (
    AssetCheckSpec,
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    MultiPartitionsDefinition,
    PartitionsDefinition,
    PreviewWarning,
    StaticPartitionsDefinition,
)

prompt_version_partitions = DynamicPartitionsDefinition(name="prompt_version")
day_partitions = DailyPartitionsDefinition(start_date="2026-11-01", timezone="UTC")


def register_version(version: str, home: str) -> str | None:
    """Add the ``prompt_version`` partition to the Dagster instance at ``home`` (the
    configured $DAGSTER_HOME), so a version evaluated from the CLI can be materialized and
    its checks read there (partition key ``v1|<suite>``); None when done, else why not."""
    from dagster import DagsterInstance

    try:
        with DagsterInstance.get() as instance:
            name = prompt_version_partitions.name
            if not instance.has_dynamic_partition(name, version):
                instance.add_dynamic_partitions(name, [version])
    except Exception as exc:  # the run stands; the partition can be added later
        return (
            f"could not add partition {version} to the Dagster instance at {home} "
            f"({type(exc).__name__}: {exc}); the label sensor adds it on its next tick"
        )
    return None


@dataclass(frozen=True)
class Partitions:
    suite_names: tuple[str, ...]
    suites: StaticPartitionsDefinition
    evals: MultiPartitionsDefinition  # suite × prompt_version
    traces: MultiPartitionsDefinition  # day × suite


def build_partitions(suite_names: Sequence[str]) -> Partitions:
    suites = StaticPartitionsDefinition(list(suite_names))
    return Partitions(
        suite_names=tuple(suite_names),
        suites=suites,
        evals=MultiPartitionsDefinition(
            {"suite": suites, "prompt_version": prompt_version_partitions}
        ),
        traces=MultiPartitionsDefinition({"day": day_partitions, "suite": suites}),
    )


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
