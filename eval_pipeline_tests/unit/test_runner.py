"""The runner never drops an item: errors, timeouts and retries are recorded per item."""

import asyncio
import gc
import itertools
from typing import ClassVar

import pytest
from eval_examples.drive_thru.evaluators import order_correctness

from eval_pipeline.core.running.agent import AgentResult, current_item
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import RunnerConfig, frozen_heap, run_agent_sync
from eval_pipeline.core.scoring.apply import score_items
from eval_pipeline.core.suites.cases import GoldenCase


def make_cases(n):
    return [
        GoldenCase(
            id=f"c{i}",
            input={"customer_utterance": str(i)},
            expected_output={"expected_items": []},
            metadata={"category": "greeting", "difficulty": "easy", "tier": "smoke"},
        )
        for i in range(n)
    ]


class RateLimited(Exception):
    status_code = 429

    class response:
        headers: ClassVar = {"retry-after": "0.01"}


class FlakyAgent:
    """Raises on every third case, rate-limits the first attempt of every fifth."""

    def __init__(self):
        self.calls: dict[tuple[str, int], int] = {}
        self.running = 0
        self.peak = 0

    async def run(self, case, *, repeat):
        key = (case.id, repeat)
        self.calls[key] = self.calls.get(key, 0) + 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(0.005)
            index = int(case.id[1:])
            if index % 3 == 0:
                raise ValueError(f"agent broke on {case.id}")
            if index % 5 == 1 and self.calls[key] == 1:
                raise RateLimited("slow down")
            current_item.get().usage.add("gpt-4o-mini", 1000, 100)  # as its model call would
            return AgentResult(output={"current_order": None})
        finally:
            self.running -= 1


def test_failures_are_recorded_and_every_item_is_present():
    cases, agent = make_cases(20), FlakyAgent()
    config = RunnerConfig(concurrency=4, repeats=2, backoff_base_s=0.001)
    outputs = run_agent_sync(agent, cases, config)
    assert [(o.item_id, o.repeat) for o in outputs] == [(c.id, r) for c in cases for r in (0, 1)]
    failed = {o.item_id for o in outputs if o.error}
    assert failed == {f"c{i}" for i in range(20) if i % 3 == 0}
    assert all("ValueError: agent broke on" in o.error for o in outputs if o.error)
    retried = [o for o in outputs if o.attempts == 2]
    assert {o.item_id for o in retried} == {"c1", "c11", "c16"}  # 6 is already a hard failure
    assert all(o.error is None for o in retried)
    assert agent.peak <= 4
    ok = next(o for o in outputs if o.error is None)
    assert ok.cost_usd == pytest.approx(PriceTable().cost("gpt-4o-mini", 1000, 100))
    # errors score 0 with the reason, so no item disappears from the scores either
    scores = score_items(cases, outputs, [order_correctness])
    assert len(scores) == len(outputs)
    assert all(s.value == 0.0 and "agent error" in s.comment
               for s in scores if s.item_id in failed)  # fmt: skip


class SlowAgent:
    async def run(self, case, *, repeat):
        await asyncio.sleep(10)


def test_an_item_timeout_is_recorded_not_retried():
    """Running the item again would repeat the same work against a server that is slow
    (and, single-slot, still computing the abandoned request)."""
    config = RunnerConfig(timeout_s=0.05, max_attempts=2, backoff_base_s=0.001)
    (out,) = run_agent_sync(SlowAgent(), make_cases(1), config)
    assert out.output is None and out.attempts == 1 and out.error_kind == "timeout"
    assert "no answer within 0.05 s" in out.error


def test_rate_limit_spaces_item_starts():
    class Stamp:
        def __init__(self):
            self.starts = []

        async def run(self, case, *, repeat):
            self.starts.append(asyncio.get_running_loop().time())
            return AgentResult(output={})

    agent = Stamp()
    run_agent_sync(agent, make_cases(5), RunnerConfig(concurrency=5, requests_per_second=50))
    starts = sorted(agent.starts)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    # 50 per second: a start every 20 ms. One start a busy loop delays by a few ms shortens
    # the gap after it, not the span: 4 gaps take ≥ 70 ms, none under half the interval
    assert starts[-1] - starts[0] >= 0.07 and min(gaps) >= 0.01, gaps


def test_bad_config_is_refused():
    with pytest.raises(ValueError):
        RunnerConfig(concurrency=0)


def test_provider_errors_are_retryable_by_ancestry():
    """langchain-openai re-raises the SDK's errors as renamed subclasses; a timeout must
    still be retried and a bad request must not."""
    import httpx
    import openai
    from langchain_openai.chat_models.base import OpenAIInvalidRequestError, OpenAITimeoutError

    from eval_pipeline.core.running.retry import is_retryable

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    assert is_retryable(OpenAITimeoutError(request=request))
    assert is_retryable(openai.APIConnectionError(request=request))
    bad = OpenAIInvalidRequestError("bad", response=httpx.Response(400, request=request), body={})
    assert not is_retryable(bad)
    assert not is_retryable(ValueError("not a provider error"))


class FreezeProbe:
    """Records how many objects the collector had frozen while each item ran."""

    def __init__(self):
        self.frozen: list[int] = []

    async def run(self, case, *, repeat):
        self.frozen.append(gc.get_freeze_count())
        await asyncio.sleep(0)
        if case.id == "c1":
            raise RuntimeError("an item fails")
        return AgentResult(output={"order_items": []})


def test_heap_is_frozen_during_a_run_only():
    gc.unfreeze()
    probe = FreezeProbe()
    outputs = run_agent_sync(probe, make_cases(3), RunnerConfig(concurrency=2, max_attempts=1))
    assert [o.error is None for o in outputs] == [True, False, True]
    assert len(probe.frozen) == 3 and min(probe.frozen) > 1000  # the imported libraries
    assert gc.get_freeze_count() == 0
    with pytest.raises(KeyError), frozen_heap():
        raise KeyError("a run that dies still unfreezes")
    assert gc.get_freeze_count() == 0
    gc.freeze()  # frozen by someone else: a run leaves it frozen
    try:
        run_agent_sync(FreezeProbe(), make_cases(1), RunnerConfig())
        assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()


def test_tokens_of_every_attempt_are_counted_and_an_errored_item_keeps_them():
    """Each attempt's model calls were paid for: the item's tokens and cost sum them, even
    when no attempt succeeded; a model without a price is named, not priced at $0."""

    class SpendsThenTimesOut:
        async def run(self, case, *, repeat):
            scope = current_item.get()
            scope.usage.add("gpt-4o-mini", 500, 20)  # one call answered...
            scope.usage.add("my-local-model", 100, 5)
            raise TimeoutError("the second call never came back")  # ...the next did not

    config = RunnerConfig(max_attempts=3, backoff_base_s=0.001)
    (out,) = run_agent_sync(SpendsThenTimesOut(), make_cases(1), config)
    assert out.error and out.error_kind == "timeout" and out.attempts == 3
    assert (out.input_tokens, out.output_tokens) == (3 * 600, 3 * 25)
    assert out.usage["gpt-4o-mini"] == {
        "input_tokens": 1500,
        "output_tokens": 60,
        "calls": 3,
        "calls_with_tools": 0,
        "tool_call_answers": 0,
        "invalid_tool_calls": 0,
    }
    assert out.cost_usd == pytest.approx(PriceTable().cost("gpt-4o-mini", 1500, 60))
    assert out.unpriced_models == ["my-local-model"]


def test_a_retried_attempt_gets_a_seed_of_its_own():
    seeds: list[int] = []

    class TimesOutOnce:
        async def run(self, case, *, repeat):
            seeds.append(current_item.get().seed)
            if len(seeds) == 1:
                raise TimeoutError("first attempt timed out")
            return AgentResult(output={})

    (out,) = run_agent_sync(TimesOutOnce(), make_cases(1), RunnerConfig(backoff_base_s=0.001))
    assert out.error is None and out.attempts == 2
    assert len(set(seeds)) == 2  # the same seed would repeat the same work


def test_a_run_knows_the_commit_of_the_agents_code(tmp_path, monkeypatch):
    """The commit of the repository the agent's code is in, +dirty with uncommitted
    changes; CI's variables win; outside a repository (or without git) None, never a
    failure."""
    import subprocess

    from eval_pipeline.core.running.commit import code_commit

    for name in ("EVAL_GIT_COMMIT", "GITHUB_SHA"):
        monkeypatch.delenv(name, raising=False)
    assert code_commit(tmp_path) is None  # not a repository
    agent = tmp_path / "agent.py"
    agent.write_text("x = 1\n")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, text=True,
                              capture_output=True).stdout.strip()  # fmt: skip

    git("init", "-q")
    git("add", "agent.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "agent")
    head = git("rev-parse", "HEAD")
    assert code_commit(agent) == head
    agent.write_text("x = 2\n")
    assert code_commit(agent) == f"{head}+dirty"
    monkeypatch.setenv("GITHUB_SHA", "feed42")
    assert code_commit(agent) == "feed42"
