"""The Dagster instance settings evaluation runs need, locally and in production.

``dagster dev`` reads ``$DAGSTER_HOME/dagster.yaml`` (and warns about a dagster.yaml in the
working directory that it will not use). ``eval-pipeline demo`` and ``eval-pipeline
instance`` write LOCAL_INSTANCE there: SQLite storage with the same queue, tag limits and
pool as deploy/dagster.yaml. ``doctor`` checks that the instance in use has them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LOCAL_INSTANCE = """\
# Written by eval-pipeline (demo / instance): the local Dagster instance, SQLite storage in
# this folder, with the run queue and limits an evaluation needs (as deploy/dagster.yaml).
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator

concurrency:
  runs:
    max_concurrent_runs: 4
    tag_concurrency_limits:
      # one run per (suite x prompt version) partition at a time
      - key: dagster/partition
        value: {applyLimitPerUniqueValue: true}
        limit: 1
      # per model provider (eval/model_provider tag): stay under its rate limit
      - key: eval/model_provider
        value: {applyLimitPerUniqueValue: true}
        limit: 4
  pools:
    default_limit: 4   # steps that call the model (pool "llm") across all runs

run_monitoring:
  enabled: true
  poll_interval_seconds: 30

telemetry:
  enabled: false
"""
# What earlier versions of the demo wrote: replaced without asking, it configured nothing.
OLD_DEFAULT = "telemetry:\n  enabled: false\n"


def write_local_instance(home: Path) -> tuple[Path, bool]:
    """Write LOCAL_INSTANCE to ``home/dagster.yaml`` unless someone else's file is there;
    (the path, whether it holds ours)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "dagster.yaml"
    if not path.exists() or path.read_text() in (OLD_DEFAULT, ""):
        path.write_text(LOCAL_INSTANCE)
    return path, path.read_text() == LOCAL_INSTANCE


def instance_problems(instance: Any) -> list[str]:
    """What a Dagster instance lacks for evaluation runs (empty: nothing)."""
    problems = []
    if type(instance.run_coordinator).__name__ != "QueuedRunCoordinator":
        problems.append("runs are not queued (run_coordinator is not QueuedRunCoordinator)")
    config = instance.get_concurrency_config()
    limits = {limit.get("key") for limit in config.run_queue_config.tag_concurrency_limits or []}
    if "dagster/partition" not in limits:
        problems.append("no one-run-per-partition limit (tag dagster/partition)")
    if config.pool_config.default_pool_limit is None:
        problems.append('no pool limit for model-calling steps (pool "llm")')
    return problems
