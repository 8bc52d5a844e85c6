"""The three stages of an evaluation run, shared by the Dagster assets and the CLI.

outputs (agent calls) → scores (evaluators) → summary (aggregates, run complete).
Each stage reads its inputs from and writes its results to the results store in one
transaction, so a crash between stages leaves a 'running' run and no half summary.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from eval_pipeline.core.agent import Agent
from eval_pipeline.core.cases import DatasetError, GoldenCase, dataset_version, select_tier
from eval_pipeline.core.memo import CachePolicy, MemoScope, MemoWriter, check_policy
from eval_pipeline.core.pricing import PriceTable
from eval_pipeline.core.prompts import PromptVersion
from eval_pipeline.core.records import ItemOutput, ItemScore, RunRecord
from eval_pipeline.core.redact import redact
from eval_pipeline.core.results_store import ResultsStore
from eval_pipeline.core.runner import Progress, RunnerConfig, run_agent, run_sync
from eval_pipeline.core.scoring import item_results, run_level, score_items
from eval_pipeline.core.suite import Suite
from eval_pipeline.core.summary import summarize


def new_run_id(suite: str, prompt: PromptVersion) -> str:
    return f"{suite}-{prompt.partition_key}-{uuid.uuid4().hex[:12]}"


def start_run(
    store: ResultsStore,
    suite: Suite,
    prompt: PromptVersion,
    all_cases: Sequence[GoldenCase],
    **fields: Any,
) -> RunRecord:
    """Build the run record (see ``build_run``) and store it."""
    run = build_run(suite, prompt, all_cases, **fields)
    store.create_run(run)
    return run


def build_run(
    suite: Suite,
    prompt: PromptVersion,
    all_cases: Sequence[GoldenCase],
    *,
    tier: str,
    repeats: int,
    model_params: dict[str, Any],
    run_id: str | None = None,
    dagster_run_id: str | None = None,
) -> RunRecord:
    return RunRecord(
        run_id=run_id or new_run_id(suite.name, prompt),
        suite=suite.name,
        prompt_name=prompt.name,
        prompt_version=prompt.partition_key,
        prompt_hash=prompt.content_hash,
        prompt_config=dict(prompt.config),
        dataset_version=dataset_version(all_cases),  # the whole dataset; the tier selects
        model=str(model_params.get("model", "")),
        model_params=model_params,
        tier=tier,
        repeats=repeats,
        agent_version=suite.code_version,
        evaluator_versions=suite.versions_of_evaluators(),
        dagster_run_id=dagster_run_id,
    )


def produce_outputs(
    store: ResultsStore,
    run: RunRecord,
    agent: Agent,
    cases: Sequence[GoldenCase],
    config: RunnerConfig,
    *,
    cache: str = "reuse",
    prices: PriceTable | None = None,
    progress: Progress | None = None,
) -> list[ItemOutput]:
    """Run the agent on the cases the memo cannot answer (see core/memo.py for ``cache``);
    reused outputs name the run that produced them in ``source_run_id``."""
    policy = check_policy(cache)
    with failure_recorded(store, run.run_id):
        scope = MemoScope.of(run)
        keys = {(c.id, r): scope.key(c, r) for c in cases for r in range(config.repeats)}
        known = _memoized(store, keys, policy, run.run_id)
        writer = None
        if policy != "off":
            writer = MemoWriter(partial(store.memo_put, run.suite, run.run_id), keys)

        async def produce() -> list[ItemOutput]:
            try:
                return await run_agent(agent, cases, config, prices=prices, progress=progress,
                                       known=known, on_result=writer)  # fmt: skip
            finally:
                if writer is not None:
                    await writer.flush()

        outputs = run_sync(produce())
        store.write_outputs(run.run_id, outputs)
    return outputs


def _memoized(
    store: ResultsStore, keys: dict[tuple[str, int], str], policy: CachePolicy, run_id: str
) -> dict[tuple[str, int], ItemOutput]:
    """``reuse``: any memoized output; ``refresh``: only this run's own (a crashed attempt)."""
    if policy == "off":
        return {}
    found = store.memo_get(keys.values(), run_id=run_id if policy == "refresh" else None)
    return {item: found[key] for item, key in keys.items() if key in found}


def produce_scores(
    store: ResultsStore, run_id: str, suite: Suite, cases: Sequence[GoldenCase]
) -> list[ItemScore]:
    with failure_recorded(store, run_id):
        scores = score_items(cases, store.read_outputs(run_id), suite.evaluators)
        store.write_scores(run_id, scores)
    return scores


def produce_summary(
    store: ResultsStore, run_id: str, suite: Suite, cases: Sequence[GoldenCase]
) -> dict[str, Any]:
    with failure_recorded(store, run_id):
        outputs, scores = store.read_outputs(run_id), store.read_scores(run_id)
        run_evals = run_level(suite.run_evaluators, item_results(outputs, scores))
        summary = summarize(cases, outputs, scores, run_evals)
        store.complete_run(run_id, summary)
    return summary


def cases_of_run(store: ResultsStore, run_id: str, suite: Suite) -> list[GoldenCase]:
    """The cases a run was started on, reloaded; refuses if the dataset changed since."""
    run = store.get_run(run_id)
    if run is None:
        raise DatasetError([f"run {run_id!r} is not in the results store"])
    cases = suite.load_cases()
    if dataset_version(cases) != run.dataset_version:
        raise DatasetError([
            f"{suite.dataset_dir}: the dataset changed while run {run_id} was in progress "
            f"(version {run.dataset_version} → {dataset_version(cases)}); start a new run"
        ])  # fmt: skip
    return select_tier(cases, run.tier)


@contextmanager
def failure_recorded(store: ResultsStore, run_id: str) -> Iterator[None]:
    """A stage that raises marks its run 'failed' with the (redacted) reason, then re-raises."""
    try:
        yield
    except Exception as exc:
        store.fail_run(run_id, redact(f"{type(exc).__name__}: {exc}"))
        raise
