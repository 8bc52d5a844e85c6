"""Evaluators that call a model (an LLM judge) run through the runner, like agents do.

A judge call is a model call: it needs the same concurrency limit, per-call timeout,
retries and token accounting as the agent's. Each (item, repeat, evaluator) becomes one
job that ``run_agent`` runs; the judge's tokens and cost are kept in the score's
metadata (``judge_*``) and summed apart from the agent's in the run summary, so the agent's
cost stays the agent's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langfuse import Evaluation

from eval_pipeline.core.running.agent import AgentResult
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import RunnerConfig, run_agent, run_sync
from eval_pipeline.core.scoring.evaluations import item_scores
from eval_pipeline.core.store.records import ItemOutput, ItemScore
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.evaluators.declare import Evaluator, evaluator_name

JUDGE_KEYS = ("judge_input_tokens", "judge_output_tokens", "judge_cost_usd", "judge_calls")


def uses_model(fn: Evaluator) -> bool:
    """Whether an evaluator calls a model (``@evaluator(uses_model=True)``, ``llm_judge``)."""
    return bool(getattr(fn, "uses_model", False))


@dataclass(frozen=True)
class JudgeJob:
    """One model-backed evaluator on one output."""

    case: GoldenCase
    output: ItemOutput
    evaluator: Evaluator

    @property
    def key(self) -> str:  # a case id for the runner (GoldenCase's id pattern)
        return f"{self.case.id}.r{self.output.repeat}.{evaluator_name(self.evaluator)}"[:128]


class JudgeAgent:
    """Runs the jobs' evaluators as the runner's "agent": one job per pseudo-case."""

    def __init__(self, jobs: Sequence[JudgeJob]):
        self.jobs = {job.key: job for job in jobs}

    async def run(self, case: GoldenCase, *, repeat: int, callbacks: Any = ()) -> AgentResult:
        job = self.jobs[case.id]
        # The evaluator is synchronous; in a thread, with this task's context (the item's
        # token ledger) copied, so its model's tokens are counted.
        result = await asyncio.to_thread(
            job.evaluator, input=job.case.input, output=job.output.output,
            expected_output=job.case.expected_output, metadata=job.case.metadata.model_dump(),
        )  # fmt: skip
        evaluations = result if isinstance(result, list) else [result]
        return AgentResult({"evaluations": [
            {"name": e.name, "value": e.value, "comment": e.comment, "metadata": e.metadata}
            for e in evaluations
        ]})  # fmt: skip


def run_judges(
    jobs: Sequence[JudgeJob], config: RunnerConfig | None = None, prices: PriceTable | None = None
) -> list[ItemScore]:
    """Every job through the runner; a job that fails records its error as the score's."""
    if not jobs:
        return []
    agent = JudgeAgent(jobs)
    pseudo = [job.case.model_copy(update={"id": job.key}) for job in jobs]
    config = config or RunnerConfig()
    single = RunnerConfig(concurrency=config.concurrency, timeout_s=config.timeout_s,
                          requests_per_second=config.requests_per_second)  # fmt: skip
    outputs = run_sync(run_agent(agent, pseudo, single, prices=prices))
    scores: list[ItemScore] = []
    for job, out in zip(jobs, outputs, strict=True):
        spent = {"judge_input_tokens": out.input_tokens, "judge_output_tokens": out.output_tokens,
                 "judge_cost_usd": out.cost_usd,
                 "judge_calls": sum(u.get("calls", 0) for u in out.usage.values())}  # fmt: skip
        name = evaluator_name(job.evaluator)
        if out.error:
            why = f"judge error ({out.error_kind}): {out.error}"
            scores.append(ItemScore(job.output.item_id, job.output.repeat, name, None, why, spent,
                                    error_kind=out.error_kind or "error"))  # fmt: skip
            continue
        assert out.output is not None  # (no error: the judge agent answered)
        evaluations = [Evaluation(**e) for e in out.output["evaluations"]]
        scores += item_scores(job.output.item_id, job.output.repeat, evaluations, spent)
    return scores
