"""A plan of several shards run in-process: one worker process per shard, with their
progress gathered. Each worker is forked from a server process that has imported our code
and its libraries once (multiprocessing's forkserver, as a Dagster step's process is);
the server imports nothing of the team's, so an agent's modules load in each worker, fresh."""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Protocol

from eval_pipeline.core.evaluation.plan import RunPlan
from eval_pipeline.core.evaluation.stages import failure_recorded
from eval_pipeline.core.running import seal
from eval_pipeline.core.running.process import end_with_parent
from eval_pipeline.core.running.runner import Progress
from eval_pipeline.core.running.shards import Shard
from eval_pipeline.core.store.results_store import ResultsStore


class ShardEntry(Protocol):
    """Runs one shard in a fresh process: plans the run again (same run id), builds the
    agent there and calls ``produce(..., shard=shard)``; reports progress on ``updates`` as
    (shard index, done, total). Must pickle (it crosses into the worker process)."""

    def __call__(self, shard: Shard, updates: ShardUpdates) -> None: ...


class ShardUpdates(Protocol):
    def put(self, item: tuple[int, int, int]) -> None: ...


def shard_progress(shard: Shard, updates: ShardUpdates, every_s: float = 0.5) -> Progress:
    """A worker's progress callback: sends (shard, done, total) at most every ``every_s``."""
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= every_s:
            last[0] = now
            updates.put((shard.index, done, total))

    return report


# What the worker server imports once, besides the worker's own module: a fresh
# interpreter spent about 5 s of CPU importing these before its first item.
PRELOAD = ("langgraph.graph", "langchain_openai")


def forked_from(module: str) -> multiprocessing.context.BaseContext:
    """Processes forked from a server that has imported ``module`` and ``PRELOAD`` once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([module, *PRELOAD])
    return context


def produce_in_processes(
    store: ResultsStore, plan_: RunPlan, worker: ShardEntry, *, progress: Progress | None = None
) -> None:
    """Each shard in a process of its own (module docstring), all at once (the caller
    checks the outputs complete: service ``check_produced``). The workers end with this
    process (a ``kill -9`` of it leaves none calling the model)."""
    with seal.ours():  # (a replay's seal refuses every other process: these are ours)
        _produce(store, plan_, worker, progress)


def _produce(store: ResultsStore, plan_: RunPlan, worker: ShardEntry,
             progress: Progress | None) -> None:  # fmt: skip
    context = forked_from(type(worker).__module__)
    updates = context.Queue()
    done = [0] * len(plan_.shards)
    pool = ProcessPoolExecutor(len(plan_.shards), mp_context=context, initializer=_started,
                               initargs=(updates, os.getpid(), dict(os.environ)))  # fmt: skip
    with failure_recorded(store, plan_.run.run_id), pool:
        futures = [pool.submit(_run_shard, worker, shard) for shard in plan_.shards]
        while not all(f.done() for f in futures) or not updates.empty():
            try:
                index, shard_done, _ = updates.get(timeout=0.2)
            except queue.Empty:
                continue
            done[index] = shard_done
            if progress:
                progress(sum(done), plan_.n_items)
        for future in futures:
            future.result()  # a shard that failed fails the run (its error, re-raised)


_updates: ShardUpdates | None = None  # in a worker process: where its progress goes


def _started(updates: ShardUpdates, parent: int, environ: dict[str, str]) -> None:
    """A worker process's start: it ends with ``parent``; its progress goes to ``updates``;
    its environment is ``parent``'s now (a fork server's children inherit the server's,
    from when it started: a second run of this process may have other settings)."""
    global _updates
    end_with_parent(parent)
    os.environ.clear()
    os.environ.update(environ)
    _updates = updates


def _run_shard(worker: ShardEntry, shard: Shard) -> None:
    assert _updates is not None, "a shard runs in a worker process started by _started"
    worker(shard, _updates)
