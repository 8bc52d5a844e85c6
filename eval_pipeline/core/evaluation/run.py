"""A run from its plan to its verdict: ``conclude`` is what follows scoring in every driver;
``evaluate`` runs every stage in this process (the CLI and ``evaluate()``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.evaluation.plan import RunPlan, cases_run
from eval_pipeline.core.evaluation.processes import ShardWorker, produce_in_processes
from eval_pipeline.core.evaluation.result import EvalResult
from eval_pipeline.core.evaluation.sequential import go_on_until_decided
from eval_pipeline.core.evaluation.stages import produce, score, summarise, verdict
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import Progress
from eval_pipeline.core.store.results_store import ResultsStore


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


def evaluate(
    store: ResultsStore,
    plan_: RunPlan,
    agent: Agent,
    *,
    prices: PriceTable | None = None,
    progress: Progress | None = None,
    shard_worker: ShardWorker | None = None,
) -> EvalResult:
    """Every stage of a planned run in this process (service/run.py ``run_in_process``
    drives it for the CLI and ``evaluate()``): the agent's items here, or, for a plan of
    several shards, in one ``shard_worker`` process per shard."""
    store.create_run(plan_.run)
    if len(plan_.shards) == 1:
        produce(store, plan_, agent, prices=prices, progress=progress)
    elif shard_worker is None:
        raise ValueError(f"{len(plan_.shards)} shards need a shard worker to run them")
    else:
        produce_in_processes(store, plan_, shard_worker, progress=progress)
    cases = cases_run(store, plan_.run.run_id, plan_.cases)
    score(store, plan_.run.run_id, plan_.suite, cases, prices=prices)
    return conclude(store, plan_, cases, lambda: agent, prices=prices, progress=progress)
