"""Split one run's items into shards that run apart (Dagster steps, CLI worker processes)
under the run's one budget.

Why: one event loop spends 3.5–5 ms of CPU per model call, so one process tops out near
200–280 calls/s however many items are in flight (BENCHMARKS.md). A shard is a slice of the
run's items ((case, repeat) pairs), run by ``evaluation.produce`` in a process (or pod) of
its own; the run stays one run: one run id, one memo, one summary.

Items, not cases, are dealt out: shards then differ by at most one item, and each gets the
same mix of short and long cases. Dealing whole cases (all repeats together) left one of two
shards a case's repeats longer, and a run ends with its slowest shard: the benchmark's
2-shard run could reach at most 88% of the limit that way, 96% this way (BENCHMARKS.md).

The budget is the run's, split: with concurrency C and R starts per second, shard i of N
runs C/N items at once (the remainder to the first shards) and starts R/N per second, so
all shards together never exceed what was asked of the run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.running.runner import Job

# Above ~32 items in flight one event loop is CPU-bound (BENCHMARKS.md, throughput).
CONCURRENCY_PER_SHARD = 32
# Below this a shard's process start (~3 s of imports) costs more than it saves.
MIN_ITEMS_PER_SHARD = 200


WHAT = "shards (--workers, run config `shards`)"  # what the user set, in either place


class ShardingError(ConfigurationError):
    """A shard count the run cannot use; the message says what would work."""


@dataclass(frozen=True)
class Shard:
    """One slice of a run: which items (every ``count``-th from ``index``) and its budget."""

    index: int
    count: int
    concurrency: int
    requests_per_second: float | None = None

    @property
    def label(self) -> str:
        return f"shard {self.index + 1}/{self.count}"

    def select(self, jobs: Sequence[Job]) -> list[Job]:
        """This shard's items: round-robin over the run's (``runner.jobs_of`` order), so sizes,
        categories and lengths spread evenly and every item lands in exactly one shard."""
        return list(jobs[self.index :: self.count])


def auto_count(items: int, concurrency: int) -> int:
    """The shard count a run gets when none is asked for: one per CONCURRENCY_PER_SHARD
    items in flight, at most one per MIN_ITEMS_PER_SHARD items (1 for small runs)."""
    by_concurrency = math.ceil(concurrency / CONCURRENCY_PER_SHARD)
    return max(1, min(by_concurrency, items // MIN_ITEMS_PER_SHARD))


def split(
    count: int, n_items: int, concurrency: int, requests_per_second: float | None
) -> list[Shard]:
    """``count`` shards sharing the run's concurrency and rate (see the module docstring)."""
    if count < 1:
        raise ShardingError(f"{WHAT} must be at least 1 (got {count})")
    if count > concurrency:
        raise ShardingError(
            f"{count} {WHAT} but concurrency {concurrency}: each needs at least one item in "
            f"flight; raise the concurrency or use at most {concurrency}"
        )
    if count > n_items:
        raise ShardingError(
            f"{count} {WHAT} but the run has {n_items} items: use at most {n_items}"
        )
    base, extra = divmod(concurrency, count)
    rate = requests_per_second / count if requests_per_second else None
    return [Shard(i, count, base + (1 if i < extra else 0), rate) for i in range(count)]
