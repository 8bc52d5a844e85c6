"""Run an agent over cases: bounded concurrency, rate limit, timeouts, retries, repeats.

No item is ever dropped: whatever happens, every (case, repeat) gets an ItemOutput,
with the error recorded when the agent could not produce an output. The one exception is
a run's budget (core/running/budget.py): once it is reached, items not yet started are
not started, and the caller records that the run stopped.

Retries: a failing model call is retried by its client (``max_retries``, llm/factory.py);
the runner retries an item only for transient failures no client retried (an agent
service's 5xx or 429, a dropped connection), at most ``max_attempts`` attempts in all, each
with a seed of its own, after a wait (Retry-After, or exponential backoff with full
jitter). An attempt that runs past ``timeout_s`` is not retried: its model calls already
had their tries, and a slow server that keeps computing abandoned requests (llama.cpp) only
gets further behind. So one failing model call is sent at most 1 + max_retries times.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from eval_pipeline.core.errors import USER_CODE_FAILURES
from eval_pipeline.core.options import DEFAULTS
from eval_pipeline.core.running import seal
from eval_pipeline.core.running.agent import (
    Agent,
    ItemScope,
    RecordsReused,
    UsageLedger,
    item_scope,
    item_seed,
)
from eval_pipeline.core.running.budget import BudgetGuard, Spending
from eval_pipeline.core.running.failures import error_kind, fault_of
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.retry import backoff_delay, is_retryable, retried_by_client
from eval_pipeline.core.store.records import ItemOutput
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.util.redact import redact

Progress = Callable[[int, int], None]  # (done, total)
T = TypeVar("T")
ResultSink = Callable[[ItemOutput], Awaitable[None]]  # called as each item completes
Job = tuple[GoldenCase, int]  # one item of a run: a case and which repeat of it
MAX_ERROR_CHARS = 2000


def jobs_of(
    cases: Sequence[GoldenCase], repeats: int, more: Mapping[str, int] | None = None
) -> list[Job]:
    """A run's items in the one order every part of a run uses: case by case, repeats
    together; ``more``: the cases that get another number of repeats (case id → count)."""
    more = more or {}
    return [(case, repeat) for case in cases for repeat in range(more.get(case.id, repeats))]


@dataclass(frozen=True)
class RunnerConfig:
    concurrency: int = DEFAULTS.concurrency
    requests_per_second: float | None = None  # item starts per second, None = unlimited
    timeout_s: float = DEFAULTS.timeout_s  # per attempt of one item (all of its model calls)
    max_attempts: int = 3  # in all, the first included
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    repeats: int = 1
    base_seed: int = 0

    def __post_init__(self) -> None:
        if self.concurrency < 1 or self.repeats < 1 or self.max_attempts < 1:
            raise ValueError("concurrency, repeats and max_attempts must be at least 1")
        if self.requests_per_second is not None and self.requests_per_second <= 0:
            raise ValueError("requests_per_second must be positive")


class RateLimiter:
    """Spaces starts at least 1/rate seconds apart (a token bucket of size 1)."""

    def __init__(self, rate: float | None):
        self.interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


async def run_agent(
    agent: Agent,
    cases: Sequence[GoldenCase],
    config: RunnerConfig,
    *,
    prices: PriceTable | None = None,
    progress: Progress | None = None,
    known: Mapping[tuple[str, int], ItemOutput] | None = None,
    on_result: ResultSink | None = None,
    jobs: Sequence[Job] | None = None,
    guard: BudgetGuard | None = None,
) -> list[ItemOutput]:
    """Evaluate every case ``config.repeats`` times; results come back in job order.

    ``known`` outputs (by (case id, repeat), e.g. from the memo) are returned as they are,
    without calling the agent; ``on_result`` sees every newly produced output. ``jobs``
    runs only those items (a shard's, in their order) instead of every case × repeat.
    With ``guard`` (a budget), an item whose turn comes once the budget is reached is not
    started and has no output: the only way an item is left out.
    """
    prices, known = prices or PriceTable(), known or {}
    semaphore = asyncio.Semaphore(config.concurrency)
    limiter = RateLimiter(config.requests_per_second)
    jobs = list(jobs) if jobs is not None else jobs_of(cases, config.repeats)
    done = sum(1 for case, repeat in jobs if (case.id, repeat) in known)
    recorder = agent if isinstance(agent, RecordsReused) else None  # a traced agent

    async def one(case: GoldenCase, repeat: int) -> ItemOutput | None:
        nonlocal done
        if (case.id, repeat) in known:
            if recorder is not None:
                await recorder.reused(case, repeat, known[case.id, repeat])
            return known[case.id, repeat]
        async with semaphore:
            if guard is not None and not guard.may_start():
                return None
            result = await _run_with_retries(agent, case, repeat, config, limiter, prices)
        if guard is not None:
            guard.add(Spending.of_output(result))
        if on_result:
            await on_result(result)
        done += 1
        if progress:
            progress(done, len(jobs))
        return result

    with frozen_heap():
        results = await asyncio.gather(*(one(c, r) for c, r in jobs))
    return [r for r in results if r is not None]


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the objects that exist before a run out of the collector's full passes.

    A full collection walks every object in the process, and with LangChain, pydantic and
    Dagster loaded that stalls the event loop (and every item in flight) for ~100 ms, several
    times per run (see BENCHMARKS.md). Frozen objects are skipped until the run ends;
    garbage among them is collected after that, as usual. A heap someone else froze (a
    pre-fork server, a run already in progress) is left as it is.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def _run_with_retries(
    agent: Agent,
    case: GoldenCase,
    repeat: int,
    config: RunnerConfig,
    limiter: RateLimiter,
    prices: PriceTable,
) -> ItemOutput:
    started = time.perf_counter()
    usage = UsageLedger()  # every attempt's model calls are paid for

    def finished(attempt: int, **result: Any) -> ItemOutput:
        cost, unpriced = prices.cost_of(usage)
        return ItemOutput(
            item_id=case.id, repeat=repeat, latency_ms=(time.perf_counter() - started) * 1000,
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cost_usd=cost, unpriced_models=unpriced, attempts=attempt,
            usage={m: vars(u).copy() for m, u in usage.by_model.items()}, **result,
        )  # fmt: skip

    for attempt in range(1, config.max_attempts + 1):
        await limiter.wait()
        scope = ItemScope(case.id, repeat, item_seed(case.id, repeat, config.base_seed, attempt),
                          usage)  # fmt: skip
        deadline = asyncio.timeout(config.timeout_s)
        try:
            with item_scope(scope):
                async with deadline:
                    result = await agent.run(case, repeat=repeat)
        except USER_CODE_FAILURES as raised:  # every failure becomes data on the item
            exc = raised
            if deadline.expired():  # (not a TimeoutError the agent's own code raised)
                exc = ItemTimeout(f"no answer within {config.timeout_s:g} s (per-item timeout)")
            cause = _cause(exc)
            if (
                not scope.problems
                and attempt < config.max_attempts
                and is_retryable(cause)
                and not retried_by_client(cause)
            ):
                await asyncio.sleep(
                    backoff_delay(cause, attempt, config.backoff_base_s, config.backoff_max_s)
                )
                continue
            partial = getattr(raised, "partial_output", None) or scope.progress.get("output")
            if scope.problems:  # what the agent raised was the problem's consequence
                return finished(attempt, output=partial, **_problem(scope))
            return finished(attempt, output=partial, error=_describe(exc),
                            error_kind=error_kind(cause), fault=fault_of(cause))  # fmt: skip
        if scope.problems:  # the agent answered, but not from what the run claims to test
            return finished(attempt, output=result.output, **_problem(scope))
        return finished(attempt, output=result.output)
    raise AssertionError("unreachable: the loop returns on the last attempt")


def _problem(scope: ItemScope) -> dict[str, Any]:
    """The item's error from the problems reported while it ran (the first names the kind)."""
    first, more = scope.problems[0], len(scope.problems) - 1
    text = first.message + (f" (and {more} more problem(s) of this item)" if more else "")
    return {"error": _describe_text(text), "error_kind": first.kind, "fault": "infrastructure"}


def _cause(exc: BaseException) -> BaseException:
    """What failed the item. A conversation that failed mid-way (ConversationFailed) keeps
    the turns played before it in ``partial_output``; its cause (an HTTP status, a
    timeout…) decides the retry and the error kind."""
    if getattr(exc, "partial_output", None) is not None and isinstance(exc.__cause__, Exception):
        return exc.__cause__
    return exc


class ItemTimeout(TimeoutError):
    """An attempt ran past the item timeout (not retried: see the module docstring)."""

    retryable = False


def _describe(exc: BaseException) -> str:
    return _describe_text(f"{type(exc).__name__}: {exc}")


def _describe_text(text: str) -> str:
    text = redact(text)
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on the process's evaluation loop and wait for its result.

    One loop for every run of the process, in a thread of its own: a team's agent often
    keeps an async client at module level (langchain-openai caches one per process), and
    such a client belongs to the loop it first ran on; a fresh loop per run broke every
    run after the first with "Event loop is closed". It is asyncio's own loop: every
    connection it opens goes through Python's sockets, where replay's guard sees it
    (uvloop's would not, and measured no faster: BENCHMARKS.md)."""
    loop = _evaluation_loop()
    if threading.current_thread() is _LOOP_THREAD[0]:
        raise RuntimeError("run_sync called from inside the evaluation loop: await instead")
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    try:
        return future.result()
    except BaseException:  # the caller was interrupted: stop the work it waited for
        future.cancel()
        raise


_LOOP_LOCK = threading.Lock()
_LOOP_THREAD: list[threading.Thread | None] = [None]
_LOOP: list[asyncio.AbstractEventLoop | None] = [None]
# Sync code runs in the loop's default executor: a sync callable agent, LangGraph's sync
# nodes and tasks. asyncio's default pool has min(32, cores + 4) threads (6 here), and a
# sync functional-API entrypoint holds its thread while it waits for its tasks' threads:
# six items in flight took all six and waited for ever. Threads start only when needed.
EXECUTOR_THREADS = 1024


def _evaluation_loop() -> asyncio.AbstractEventLoop:
    with _LOOP_LOCK:
        loop = _LOOP[0]
        if loop is None:
            loop = asyncio.new_event_loop()
            pool = ThreadPoolExecutor(  # (its threads serve every item: seal.shared_thread)
                max_workers=EXECUTOR_THREADS, thread_name_prefix="eval-item",
                initializer=seal.shared_thread,
            )
            loop.set_default_executor(pool)
            thread = threading.Thread(target=loop.run_forever, name="eval-loop", daemon=True)
            thread.start()
            _LOOP[0], _LOOP_THREAD[0] = loop, thread
        return loop


def run_agent_sync(
    agent: Agent,
    cases: Sequence[GoldenCase],
    config: RunnerConfig,
    **options: Any,
) -> list[ItemOutput]:
    """Blocking wrapper (tests, scripts); the options are run_agent's."""
    return run_sync(run_agent(agent, cases, config, **options))
