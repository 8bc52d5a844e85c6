"""Choosing a run's baseline, and items that flip across runs: questions the results store
answers about a suite's history (the gate itself is statistics only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eval_pipeline.core.scoring.reducers import outcome_flips, reduce_items
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.records import RunRecord
from eval_pipeline.core.store.results_store import ResultsStore

MAX_LISTED = 15


@dataclass(frozen=True)
class PassedOver:
    """A run the choice of a baseline passed over, and why (retired, never a baseline)."""

    run: RunRecord
    why: str


@dataclass(frozen=True)
class Found:
    """The baseline ``latest_baseline`` found (or None), the runs it passed over on the
    way, and why there is none when a run was there but cannot be one (``why_none``)."""

    run: RunRecord | None
    passed_over: tuple[PassedOver, ...] = ()
    why_none: str = ""


def latest_baseline(
    store: ResultsStore, candidate: RunRecord | None, suite: str, baseline_version: str
) -> Found:
    """The latest complete full-tier run of ``suite``'s ``baseline_version`` that may be a
    baseline, other than the candidate (None: the next run of another version). Passed
    over: a run a budget stopped (it lacks cases), a run the team retired, a run that may
    never be one (``RunRecord.not_baseline``: init's placeholder cases, every item failed
    in the agent). When the candidate evaluates that same version, only a run started
    before it, and on the same cases: the previous run of the version on other cases is
    none (the candidate is the first on these, and becomes the baseline)."""
    runs = store.list_runs(suite=suite, prompt_version=baseline_version, status="complete",
                           tier="full", limit=50)  # fmt: skip
    retired = store.retired(suite)
    same = candidate is not None and baseline_version == candidate.prompt_version
    passed: list[PassedOver] = []
    for run in runs:  # newest first
        if candidate is not None and run.run_id == candidate.run_id:
            continue
        if same and candidate is not None and run.started_at >= candidate.started_at:
            continue
        if run.stopped:
            passed.append(PassedOver(run, f"a budget stopped it: {run.stopped}"))
        elif run.run_id in retired:
            passed.append(PassedOver(run, retired[run.run_id].line()))
        elif run.not_baseline:
            passed.append(PassedOver(run, run.not_baseline))
        elif same and candidate is not None and run.dataset_version != candidate.dataset_version:
            return Found(None, tuple(passed), (
                f"the previous run of {baseline_version}, {run.run_id}, ran other cases "
                f"(dataset {run.dataset_version}, now {candidate.dataset_version}): this run "
                "is the first on these cases, and becomes the baseline"))  # fmt: skip
        else:
            return Found(run, tuple(passed))
    return Found(None, tuple(passed))


def find_baseline(
    store: ResultsStore, candidate: RunRecord, baseline_version: str
) -> RunRecord | None:
    """``latest_baseline``'s run for ``candidate``."""
    return latest_baseline(store, candidate, candidate.suite, baseline_version).run


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
