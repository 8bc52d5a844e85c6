"""The stages of a run after its plan: produce (agent calls, the memo), score (the
evaluators), summarise (the run is complete) and verdict (thresholds and the gate). Each
reads its inputs from and writes its results to the results store in one transaction, so a
crash between stages leaves a 'running' run and no half summary."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial

from eval_pipeline.core.evaluation.baseline import baseline_data, decided_baseline, unfit
from eval_pipeline.core.evaluation.plan import RunPlan, drawn_prefix
from eval_pipeline.core.evaluation.result import EvalResult
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.running import agent as agents
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.running.budget import Budget, BudgetGuard, Spending
from eval_pipeline.core.running.memo import CachePolicy, MemoScope, MemoWriter
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import (
    Progress,
    RunnerConfig,
    run_agent,
    run_sync,
)
from eval_pipeline.core.running.shards import Shard
from eval_pipeline.core.scoring import gate as gating
from eval_pipeline.core.scoring.apply import item_results, run_level, score_items
from eval_pipeline.core.scoring.checks import run_thresholds
from eval_pipeline.core.scoring.summary import JudgeSpending, Summary, summarize
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord, RunStatus
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import DatasetError, GoldenCase
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.core.util.redact import redact


# --- produce, score, summarise --------------------------------------------------------
def produce(
    store: ResultsStore,
    plan_: RunPlan,
    agent: Agent,
    *,
    shard: Shard | None = None,
    prices: PriceTable | None = None,
    progress: Progress | None = None,
    batch: bool = False,
) -> list[ItemOutput]:
    """Run the agent on the cases the memo cannot answer (see core/running/memo.py);
    reused outputs name the run that produced them in ``source_run_id``. With ``shard``,
    only that shard's items, under its share of the budget: its outputs replace only its
    own items in the store, so shards may run in any order, in any process. With
    ``batch`` (a sequential run's further cases), likewise: they are added to the run's."""
    run, cases, runner, policy = plan_.run, plan_.cases, plan_.runner, plan_.cache
    jobs = plan_.jobs
    if shard is not None:
        jobs = shard.select(jobs)
        runner = dataclasses.replace(runner, concurrency=shard.concurrency,
                                     requests_per_second=shard.requests_per_second)  # fmt: skip
    with failure_recorded(store, run.run_id):
        if shard is not None:
            _same_dataset(store, run)
        scope = MemoScope.of(run)
        keys = {(c.id, r): scope.key(c, r) for c, r in jobs}
        known = _memoized(store, keys, policy, run.run_id)
        guard = _budget_guard(store, plan_, shard=shard is not None, batch=batch)
        writer = None
        if policy != "off":
            writer = MemoWriter(partial(store.memo_put, run.suite, run.run_id), keys)

        async def produce_all() -> list[ItemOutput]:
            try:
                return await run_agent(
                    agent,
                    cases,
                    runner,
                    prices=prices,
                    progress=progress,
                    known=known,
                    on_result=writer,
                    jobs=jobs,
                    guard=guard,
                )
            finally:
                if writer is not None:
                    await writer.flush()
                await agents.close(agent)

        outputs = run_sync(produce_all())
        if guard is not None and guard.skipped:
            store.stop_run(run.run_id, f"{guard.reached}: {guard.skipped} of {len(jobs)} "
                                       "items not started")  # fmt: skip
        if shard is None and not batch:
            store.write_outputs(run.run_id, outputs)
        else:
            store.write_outputs(run.run_id, outputs, items=list(keys))
        ran = len(known) < len(jobs)  # (outputs all from the memo: the agent never ran)
        if ran and plan_.suite.prompt_name and not agents.prompt_read(agent):
            store.add_notes(run.run_id, [
                f"the agent never read the prompt under test ({plan_.suite.prompt_name}): "
                "prompt versions and labels make no difference to it (read ctx.prompt)"
            ])  # fmt: skip
    return outputs


def _budget_guard(
    store: ResultsStore, plan_: RunPlan, *, shard: bool, batch: bool
) -> BudgetGuard | None:
    """The run's budget as the runner spends it: a shard gets its share; a sequential
    run's further batch starts from what the run has spent so far (judges included)."""
    budget = Budget.of(plan_.request)
    if not budget:
        return None
    if shard:
        return BudgetGuard(budget.share(len(plan_.shards)))
    run_id = plan_.run.run_id
    spent = Spending.of_run(store.read_outputs(run_id), store.read_scores(run_id))
    return BudgetGuard(budget, spent if batch else None)


def _same_dataset(store: ResultsStore, run: RunRecord) -> None:
    """A shard plans the run again in its own process: its cases must be the run's."""
    stored = store.get_run(run.run_id)
    if stored is None:
        raise DatasetError([f"run {run.run_id!r} is not in the results store"])
    if stored.dataset_version != run.dataset_version:
        raise DatasetError([
            f"the dataset of {run.suite} changed while run {run.run_id} was in progress "
            f"(version {stored.dataset_version} → {run.dataset_version}); start a new run"
        ])  # fmt: skip


def check_complete(
    store: ResultsStore, run: RunRecord, cases: Sequence[GoldenCase]
) -> list[ItemOutput]:
    """The run's outputs once every shard has finished: one per (case, repeat) (the store's
    key forbids two), or an error naming what is missing (the run is marked failed)."""
    with failure_recorded(store, run.run_id):
        outputs = store.read_outputs(run.run_id)
        wanted = {(c.id, r) for c in cases for r in range(run.repeats)}
        found = {(o.item_id, o.repeat) for o in outputs}
        stopped = (store.get_run(run.run_id) or run).stopped  # a budget: items not started
        problems = [f"{len(v)} {what} (first: {min(v)[0]} repeat {min(v)[1]})"
                    for what, v in (("missing", set() if stopped else wanted - found),
                                    ("not in the run", found - wanted))
                    if v]  # fmt: skip
        if problems:
            raise RuntimeError(f"run {run.run_id}: the shards did not produce one "
                               f"output per item: {'; '.join(problems)}")  # fmt: skip
    return outputs


def _memoized(
    store: ResultsStore, keys: dict[tuple[str, int], str], policy: CachePolicy, run_id: str
) -> dict[tuple[str, int], ItemOutput]:
    """``reuse``: any memoized output; ``refresh``: only this run's own (a crashed attempt)."""
    if policy == "off":
        return {}
    found = store.memo_get(keys.values(), run_id=run_id if policy == "refresh" else None)
    return {item: found[key] for item, key in keys.items() if key in found}


def score(
    store: ResultsStore,
    run_id: str,
    suite: Suite,
    cases: Sequence[GoldenCase],
    *,
    prices: PriceTable | None = None,
    batch: bool = False,
) -> list[ItemScore]:
    """Score every output; judges (model-backed evaluators) run under the run's own
    concurrency, rate and timeout (its options, kept with the run). With ``batch``, only
    the outputs of ``cases`` (a sequential run's further cases), added to the run's."""
    with failure_recorded(store, run_id):
        run = store.get_run(run_id)
        options = run.options if run is not None else RunOptions()
        outputs = store.read_outputs(run_id)
        if batch:
            wanted = {c.id for c in cases}
            outputs = [o for o in outputs if o.item_id in wanted]
        scores = score_items(cases, outputs, suite.evaluators,
                             categories=suite.thresholds.categories,
                             judges=judge_settings(options), prices=prices)  # fmt: skip
        store.write_scores(run_id, scores, add=batch)
    return scores


def judge_settings(options: RunOptions) -> RunnerConfig:
    """How a run's LLM judges are called: its own concurrency, timeout and rate."""
    return RunnerConfig(concurrency=options.concurrency, timeout_s=options.timeout_s,
                        requests_per_second=options.requests_per_second)  # fmt: skip


def summarise(
    store: ResultsStore, run_id: str, suite: Suite, cases: Sequence[GoldenCase]
) -> Summary:
    with failure_recorded(store, run_id):
        outputs, scores = store.read_outputs(run_id), store.read_scores(run_id)
        run_evals = run_level(suite.run_evaluators, item_results(outputs, scores))
        regression = suite.thresholds.regression
        run = store.get_run(run_id)
        summary = summarize(cases, outputs, scores, run_evals,
                            pass_metric=suite.thresholds.primary_metric,
                            pass_at=regression.pass_threshold,
                            repeats=run.repeats if run else None)  # fmt: skip
        store.write_summary(run_id, summary)
    return summary


# --- verdict ----------------------------------------------------------------------------
def verdict(
    store: ResultsStore, run: RunRecord, suite: Suite, cases: Sequence[GoldenCase],
    summary: Summary, suite_cases: Sequence[GoldenCase], *, explain: bool = True,
) -> EvalResult:  # fmt: skip
    """The thresholds on ``cases`` (what the run went through), then the paired gate against
    the baseline chosen when the run was planned (``with_baseline``), with the run's own
    options (margin, min_primary): read from the results store, so every entry point
    reaches the same verdict on a stored run. The sequential gate decides on the pairs in
    ``draw_order`` of ``suite_cases`` (the suite's), as far as the run has gone without a
    gap (``drawn_prefix``): a tier run first counts once the draw reaches its cases.
    ``explain`` False: a verdict the run goes on from, which need not say what an
    undecided metric learned (``GateReport.explained`` says it for the one reported)."""
    outputs, scores = store.read_outputs(run.run_id), store.read_scores(run.run_id)
    options = run.options
    thresholds = suite.thresholds
    checks = run_thresholds(summary, scores, thresholds, min_primary=options.min_primary,
                            suite_cases=suite_cases,
                            absence_categories=suite.absence_categories)  # fmt: skip
    result = EvalResult(run, summary, checks, thresholds, outputs, scores,
                        warnings=list(run.notes), cases=list(cases))  # fmt: skip
    baseline, why_not = decided_baseline(store, run)
    if baseline is None:
        result.gate_note = why_not
        return result
    categories = {c.id: c.category for c in cases}
    rescored = bool(gating.evaluator_changes(baseline, run))
    try:
        base_data = baseline_data(
            store, baseline, suite, cases, rescore=rescored, judges=judge_settings(options)
        )
        sequential = None
        if options.gate == "sequential":
            paired = {o.item_id for o in base_data[0]}
            sequential = gating.Sequential(drawn_prefix(run, suite_cases, outputs, paired),
                                           suite_size=len(paired), explain=explain)  # fmt: skip
        result.gate = gating.compare_runs(baseline, run, base_data, (outputs, scores),
                                          thresholds, categories, margin=options.margin,
                                          rescored=rescored, sequential=sequential)  # fmt: skip
        if rescored and (spent := JudgeSpending.of(base_data[1])).calls:
            result.gate.notes.append(f"re-scoring the baseline made {spent.calls} LLM judge "
                                     f"call(s) (${spent.cost_usd:.4f})")  # fmt: skip
    except gating.NotComparable as exc:
        result.gate = gating.not_comparable_report(run, baseline, str(exc))
    return result


def settle(store: ResultsStore, result: EvalResult) -> RunStatus:
    """The run's status once its verdict is known (``RunStatus``): only a run that measured
    the agent on every case it set out to is ``complete``, and so a baseline. An ERROR run
    (an outage, a replay that missed) or one a budget stopped never is; nor a run on init's
    placeholder cases or whose every item failed in the agent (``unfit``: kept with the run
    as ``not_baseline``, which its notes and its verdict line say)."""
    if result.errors:
        status = RunStatus.ERROR
    elif result.run.stopped:
        status = RunStatus.STOPPED
    else:
        status = RunStatus.COMPLETE
    store.settle_run(result.run.run_id, status, result.verdict_record(),
                     not_baseline=unfit(result.cases, result.outputs))  # fmt: skip
    result.run = store.get_run(result.run.run_id) or result.run
    return status


@contextmanager
def failure_recorded(store: ResultsStore, run_id: str) -> Iterator[None]:
    """A stage that raises marks its run 'failed' with the (redacted) reason, then re-raises."""
    try:
        yield
    except Exception as exc:
        store.fail_run(run_id, redact(f"{type(exc).__name__}: {exc}"))
        raise
