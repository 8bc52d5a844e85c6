"""What follows scoring in every driver: ``conclude`` (service/run.py sequences a run's
stages, in one process or as Dagster steps)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from eval_pipeline.core.evaluation.continuation import go_on_until_decided
from eval_pipeline.core.evaluation.plan import RunPlan
from eval_pipeline.core.evaluation.result import EvalResult
from eval_pipeline.core.evaluation.stages import summarise, verdict
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import Progress
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import GoldenCase


def conclude(
    store: ResultsStore,
    plan_: RunPlan,
    cases: Sequence[GoldenCase],
    agent: Callable[[], Agent],
    *,
    prices: PriceTable | None = None,
    progress: Progress | None = None,
) -> EvalResult:
    """What follows scoring, the same in every driver: summarise the scored ``cases`` (the
    run is complete), judge them, and for a sequential gate go on into more of the suite's
    cases while it cannot tell (``go_on_until_decided``; the agent is built only then)."""
    run_id = plan_.run.run_id
    summary = summarise(store, run_id, plan_.suite, cases)
    sequential = plan_.request.gate == "sequential"  # (it says what it learned at the end)
    result = verdict(store, store.get_run(run_id) or plan_.run, plan_.suite, cases, summary,
                     plan_.all_cases, explain=not sequential)  # fmt: skip
    if sequential:
        result = go_on_until_decided(store, plan_, agent, result, prices=prices,
                                     progress=progress)  # fmt: skip
    return result
