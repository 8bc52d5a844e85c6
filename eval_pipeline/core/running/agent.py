"""What the runner needs from an agent under test, and what it tells the agent's model.

Adapters (agents/adapters/) turn a user's graph, callable or HTTP service into an
``Agent``. While an item runs, ``current_item`` holds its seed and its token ledger: the
chat models we build read the seed from it and count every call's tokens into it (see
llm/usage.py), so tokens are counted for every call, an item that failed half-way included.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from eval_pipeline.core.store.records import ItemOutput
from eval_pipeline.core.suites.cases import GoldenCase


@dataclass
class AgentResult:
    """One agent invocation: the output contract (a JSON-able dict)."""

    output: dict[str, Any]


class Agent(Protocol):
    """What every agent offers: ``run``. What some offer besides, each a protocol below,
    read through the functions beside them: ``ReadsPrompt``, ``CallsService``,
    ``Closeable``, ``RecordsReused``, ``OffersTools``."""

    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        """Run one case. ``callbacks`` are LangChain callbacks to attach (e.g. tracing)."""
        ...


@runtime_checkable
class ReadsPrompt(Protocol):
    """An agent that can say whether it read the prompt under test (the graph and callable
    agents, through ``ctx``): when it did not, prompt versions and labels make no
    difference to it."""

    @property
    def prompt_read(self) -> bool: ...


@runtime_checkable
class CallsService(Protocol):
    """An agent that is a service at a URL (the HTTP agent): its traffic is the thing under
    test, never recorded nor blocked."""

    @property
    def service_url(self) -> str | None: ...


@runtime_checkable
class Closeable(Protocol):
    """An agent holding something to release once its items have run (a client)."""

    async def aclose(self) -> None: ...


@runtime_checkable
class RecordsReused(Protocol):
    """An agent that records the items the memo answered without running it (a traced
    agent: each in the run's trace)."""

    async def reused(self, case: GoldenCase, repeat: int, output: ItemOutput) -> None: ...


@runtime_checkable
class OffersTools(Protocol):
    """An agent that can say, before it runs, which tools (handoffs included) its models
    may call (a graph with ToolNodes: agents/adapters/offered_tools.py); None when it
    cannot."""

    @property
    def offered_tools(self) -> frozenset[str] | None: ...


def prompt_read(agent: object) -> bool:
    """Whether ``agent`` read the prompt under test; one that cannot say is taken at its
    word that it did."""
    return agent.prompt_read if isinstance(agent, ReadsPrompt) else True


def service_url(agent: object) -> str | None:
    """The URL of the service ``agent`` calls as the thing under test, if it is one."""
    return agent.service_url if isinstance(agent, CallsService) else None


def offered_tools(agent: object) -> frozenset[str] | None:
    """The tool and handoff names ``agent`` offers its models, or None when it cannot say
    (a callable, a service, a graph calling its tools from its own nodes)."""
    return agent.offered_tools if isinstance(agent, OffersTools) else None


async def close(agent: object) -> None:
    """Release what ``agent`` holds, if it holds anything."""
    if isinstance(agent, Closeable):
        await agent.aclose()


@dataclass
class ModelUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    calls_with_tools: int = 0  # calls that offered the model tools
    tool_call_answers: int = 0  # … of them, answered with a tool call
    invalid_tool_calls: int = 0  # … of those, with arguments that are not valid JSON


@dataclass
class UsageLedger:
    """Tokens per model name, summed over every model call of one item (all attempts)."""

    by_model: dict[str, ModelUsage] = field(default_factory=dict)

    def add(self, model: str, input_tokens: int, output_tokens: int) -> None:
        usage = self.by_model.setdefault(model or "unknown", ModelUsage())
        usage.input_tokens += int(input_tokens or 0)
        usage.output_tokens += int(output_tokens or 0)
        usage.calls += 1

    def tools_offered(self, model: str, answered_with_a_call: bool, invalid: bool = False) -> None:
        """A call that offered tools, whether the model called one, and whether the
        arguments of a call it made could not be parsed (``invalid``)."""
        usage = self.by_model.setdefault(model or "unknown", ModelUsage())
        usage.calls_with_tools += 1
        usage.tool_call_answers += int(answered_with_a_call)
        usage.invalid_tool_calls += int(invalid)

    @property
    def input_tokens(self) -> int:
        return sum(u.input_tokens for u in self.by_model.values())

    @property
    def output_tokens(self) -> int:
        return sum(u.output_tokens for u in self.by_model.values())


@dataclass(frozen=True)
class ItemProblem:
    """Something outside the agent that makes an item's result untrustworthy, reported by
    the layer that saw it (a request the recordings cannot answer, a connection that
    replay blocked). The item fails with it whatever the agent did with the error."""

    kind: str  # an error kind (core/running/failures.py), e.g. "replay miss"
    message: str


@dataclass(frozen=True)
class ItemScope:
    """The item being run: its seed (per attempt), where its tokens are counted, and the
    problems reported while it ran."""

    case_id: str
    repeat: int
    seed: int
    usage: UsageLedger
    problems: list[ItemProblem] = field(default_factory=list)
    # What the item had produced so far (a conversation's finished turns), kept with the
    # error when the attempt fails, the item timeout included.
    progress: dict[str, Any] = field(default_factory=dict)
    _ended: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def report(self, problem: ItemProblem) -> bool:
        """Fail the item with ``problem``; False when the item had ended (a thread it left
        running reports late): then it is the caller's to report elsewhere."""
        with self._lock:
            if self._ended.is_set():
                return False
            self.problems.append(problem)
            return True

    def end(self) -> None:
        """The item's attempt is over: what is reported after this cannot fail it."""
        with self._lock:
            self._ended.set()


current_item: ContextVar[ItemScope | None] = ContextVar("eval_current_item", default=None)


@contextmanager
def item_scope(scope: ItemScope) -> Iterator[ItemScope]:
    token = current_item.set(scope)
    try:
        yield scope
    finally:
        current_item.reset(token)
        scope.end()


def item_seed(case_id: str, repeat: int, base: int = 0, attempt: int = 1) -> int:
    """Stable per-item, per-repeat seed (Python's hash() is salted per process). A retried
    attempt gets a seed of its own: the same seed would repeat the same work."""
    salt = f"{base}:{case_id}:{repeat}" + (f":{attempt}" if attempt > 1 else "")
    return int.from_bytes(hashlib.sha256(salt.encode()).digest()[:4], "big")
