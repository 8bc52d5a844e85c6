"""Choosing a run's baseline, and items that flip across runs: questions the results store
answers about a suite's history (the gate itself is statistics only)."""

from __future__ import annotations

from typing import Any

from eval_pipeline.core.scoring.reducers import outcome_flips, reduce_items
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.records import RunRecord
from eval_pipeline.core.store.results_store import ResultsStore

MAX_LISTED = 15


def find_baseline(
    store: ResultsStore, candidate: RunRecord, baseline_version: str
) -> RunRecord | None:
    """Latest complete full-tier run of ``baseline_version`` other than the candidate, and
    started before it when the candidate evaluates that same version; never a run a
    budget stopped (it lacks cases)."""
    runs = store.list_runs(
        suite=candidate.suite,
        prompt_version=baseline_version,
        status="complete",
        tier="full",
        limit=50,
    )
    for run in runs:  # newest first
        if run.run_id == candidate.run_id or run.stopped:
            continue
        if baseline_version == candidate.prompt_version and run.started_at >= candidate.started_at:
            continue
        return run
    return None


def flips_across_runs(
    store: ResultsStore, run: RunRecord, metric: str, thresholds: Thresholds, *, limit: int = 10
) -> list[dict[str, Any]]:
    """Items whose pass/fail outcome changed between consecutive complete full runs of the
    same prompt version (nightly drift or flakiness), most flips first."""
    config = thresholds.regression
    runs = store.list_runs(
        suite=run.suite,
        prompt_version=run.prompt_version,
        status="complete",
        tier="full",
        limit=limit,
    )
    series = [
        reduce_items(store.read_scores(r.run_id), metric, config.reducer, config.pass_threshold)
        for r in reversed(runs)
    ]
    flips = outcome_flips(series, config.pass_threshold)
    rows: list[dict[str, Any]] = [{"item_id": item, "flips": n, "runs": len(series)}
                                  for item, n in flips.items()]  # fmt: skip
    return sorted(rows, key=lambda r: (-r["flips"], r["item_id"]))[:MAX_LISTED]
