"""The tags every evaluation run carries, so the Runs list reads and filters by them:
``eval/suite``, ``eval/version`` and ``eval/trigger`` from its start, ``eval/verdict``
(PASS, FAIL, UNDECIDED, ERROR) once eval_summary has concluded."""

from __future__ import annotations

from collections.abc import Mapping

from dagster import DagsterInstance

SUITE, VERSION, TRIGGER, VERDICT = "eval/suite", "eval/version", "eval/trigger", "eval/verdict"


def trigger(tags: Mapping[str, str]) -> str:
    """What started a run: the sensor's or schedule's own tag, else a backfill, else a
    person (the Launchpad, ``dagster asset materialize``)."""
    if TRIGGER in tags:
        return tags[TRIGGER]
    if "dagster/sensor_name" in tags:
        return tags["dagster/sensor_name"]
    if "dagster/schedule_name" in tags:
        return tags["dagster/schedule_name"]
    return "backfill" if "dagster/backfill" in tags else "manual"


def tag_started(instance: DagsterInstance, run_id: str, tags: Mapping[str, str], suite: str,
                version: str) -> None:  # fmt: skip
    """The run's suite, version and trigger, as soon as it starts."""
    instance.add_run_tags(run_id, {SUITE: suite, VERSION: version, TRIGGER: trigger(tags)})


def tag_verdict(instance: DagsterInstance, run_id: str, verdict: str) -> None:
    """The run's verdict, once concluded (a re-execution's replaces its parent's)."""
    instance.add_run_tags(run_id, {VERDICT: verdict})
