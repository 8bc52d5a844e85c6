"""A run's spending limits: model calls, tokens and dollars, the agent's and its judges'.

A budget is checked before each item starts: once what the run has spent reaches a
limit, no new item is dispatched; the items in flight finish and are kept, and so is
every item already done. A sequential run checks it again before each further batch.
Judges score every item that ran (an item is never left half-scored), so their calls
count from the next check on: a run may spend past a limit by the items in flight and by
one batch's judge calls, never by a new item.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.store.records import ItemOutput, ItemScore


@dataclass(frozen=True)
class Spending:
    """What a run spent on model calls (the memo's answers cost nothing now)."""

    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Spending) -> Spending:
        return Spending(self.calls + other.calls, self.tokens + other.tokens,
                        self.cost_usd + other.cost_usd)  # fmt: skip

    @classmethod
    def of_output(cls, output: ItemOutput) -> Spending:
        """An item's model calls; none when the memo gave it (another run paid)."""
        if output.source_run_id is not None:
            return cls()
        calls = sum(int(u.get("calls", 0)) for u in (output.usage or {}).values())
        return cls(calls, output.input_tokens + output.output_tokens, output.cost_usd)

    @classmethod
    def of_judges(cls, scores: Iterable[ItemScore]) -> Spending:
        """The LLM judges' calls, as their scores' metadata records them."""
        spent = [s.metadata for s in scores if s.metadata and "judge_calls" in s.metadata]
        return cls(
            int(sum(m["judge_calls"] for m in spent)),
            int(sum(m["judge_input_tokens"] + m["judge_output_tokens"] for m in spent)),
            float(sum(m["judge_cost_usd"] for m in spent)),
        )

    @classmethod
    def of_run(cls, outputs: Iterable[ItemOutput], scores: Iterable[ItemScore]) -> Spending:
        total = cls.of_judges(scores)
        for output in outputs:
            total += cls.of_output(output)
        return total


@dataclass(frozen=True)
class Budget:
    """The limits of one run (None: no limit). ``max_cost_usd`` prices tokens with the
    price table (core/running/pricing.py): a model it cannot price costs nothing there,
    so a run with such a model is limited by calls or tokens, not dollars."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None

    @classmethod
    def of(cls, options: RunOptions) -> Budget:
        """A run's spending limits (no limit: an empty budget)."""
        return cls(options.max_calls, options.max_tokens, options.max_cost)

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.max_calls, self.max_tokens, self.max_cost_usd))

    def share(self, parts: int) -> Budget:
        """One of ``parts`` equal shares (a shard's, when a run is split over processes)."""
        if parts <= 1:
            return self
        calls, tokens = self.max_calls, self.max_tokens
        return Budget(
            None if calls is None else max(1, calls // parts),
            None if tokens is None else max(1, tokens // parts),
            None if self.max_cost_usd is None else self.max_cost_usd / parts,
        )

    def reached(self, spent: Spending) -> str | None:
        """Which limit ``spent`` reached, in words (None: none)."""
        if self.max_calls is not None and spent.calls >= self.max_calls:
            return f"--max-calls {self.max_calls} reached ({spent.calls} model calls)"
        if self.max_tokens is not None and spent.tokens >= self.max_tokens:
            return f"--max-tokens {self.max_tokens} reached ({spent.tokens} tokens)"
        if self.max_cost_usd is not None and spent.cost_usd >= self.max_cost_usd:
            return f"--max-cost {self.max_cost_usd:g} reached (${spent.cost_usd:.4f})"
        return None


class BudgetGuard:
    """A budget being spent: the runner asks it before each item starts and tells it what
    each finished item cost (one event loop: no lock needed)."""

    def __init__(self, budget: Budget, spent: Spending | None = None):
        self.budget = budget
        self.spent = spent or Spending()
        self.skipped = 0  # items not started because the budget was reached

    def add(self, spending: Spending) -> None:
        self.spent += spending

    @property
    def reached(self) -> str | None:
        return self.budget.reached(self.spent)

    def may_start(self) -> bool:
        if self.reached is None:
            return True
        self.skipped += 1
        return False
