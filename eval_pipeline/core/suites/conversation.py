"""Conversations: one case played turn by turn against one agent thread.

A conversation case's input holds ``conversation``:

    conversation:
      turns: ["I'll have a hash brown", "make that two"]  # said first, in this order
      customer: {persona: "in a hurry", max_turns: 8}     # then a simulated customer
      goal: …                # what the customer wants in the end (default: expected_output)

With ``turns`` only, the customer says them and is done. With ``customer``, a simulated
customer (agents/customer.py) continues from the goal after the scripted turns. The driver
stops when the agent finalises, the customer is done, or at ``max_turns`` customer turns.
The agent keeps its state across turns on its own thread (its checkpointer). A turn that
stops at an interrupt (core/util/interrupts.py) is resumed with the case's scripted answers;
with none left the conversation stops there, ``paused``: the simulated customer plays the
customer, never the human who approves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.running.agent import current_item
from eval_pipeline.core.suites.cases import GoldenCase

# How the simulated customer's prompt marks its goal and what it sees (agents/customer.py);
# the offline model reads them back (examples/eval_examples/drive_thru/offline_customer.py).
GOAL_MARK = "GOAL (JSON):"
SCREEN_MARK = "WHAT YOU SEE (JSON):"
DEFAULT_MAX_TURNS = 8
MAX_TURNS_LIMIT = 50
STOP_REASONS = ("agent_finalized", "customer_done", "turn_limit", "paused", "error")


class ConversationSpecError(ConfigurationError):
    """A conversation case that cannot be played; the message names the field."""


@dataclass(frozen=True)
class ConversationSpec:
    turns: tuple[str, ...]  # scripted customer turns, said first
    simulated: bool  # a simulated customer continues after the script
    persona: str
    max_turns: int
    goal: Any  # what the customer wants in the end (shown to the simulated customer)


def conversation_spec(case: GoldenCase) -> ConversationSpec | None:
    """The case's conversation, or None for a single-turn case."""
    raw = case.input.get("conversation") if isinstance(case.input, dict) else None
    if raw is None:
        return None
    where = f"case {case.id}: input.conversation"
    if not isinstance(raw, dict):
        raise ConversationSpecError(f"{where}: a mapping with turns and/or customer")
    unknown = set(raw) - {"turns", "customer", "goal"}
    if unknown:
        raise ConversationSpecError(f"{where}: unknown field(s) {sorted(unknown)}")
    turns = raw.get("turns") or []
    if not isinstance(turns, list) or not all(isinstance(t, str) and t.strip() for t in turns):
        raise ConversationSpecError(f"{where}.turns: a list of non-empty strings")
    customer = raw.get("customer")
    if customer is not None and not isinstance(customer, dict):
        raise ConversationSpecError(f"{where}.customer: a mapping (persona, max_turns)")
    customer = customer or {}
    if set(customer) - {"persona", "max_turns"}:
        raise ConversationSpecError(
            f"{where}.customer: unknown field(s) {sorted(set(customer) - {'persona', 'max_turns'})}"
        )
    if not turns and "customer" not in raw:
        raise ConversationSpecError(f"{where}: give turns, a customer, or both")
    max_turns = customer.get("max_turns", DEFAULT_MAX_TURNS if customer else len(turns))
    if not isinstance(max_turns, int) or not 1 <= max_turns <= MAX_TURNS_LIMIT:
        raise ConversationSpecError(
            f"{where}.customer.max_turns: a whole number from 1 to {MAX_TURNS_LIMIT}, "
            f"got {max_turns!r}"
        )
    goal = raw.get("goal", case.expected_output)
    return ConversationSpec(
        turns=tuple(turns), simulated="customer" in raw, persona=str(customer.get("persona", "")),
        max_turns=max(max_turns, len(turns)), goal=goal,
    )  # fmt: skip


@dataclass
class AgentTurn:
    """One customer turn and what the agent did with it."""

    customer: str
    reply: str  # the agent's last text of the turn
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # this turn's, in order
    state: dict[str, Any] = field(default_factory=dict)  # the fields shown after the turn
    finalized: bool = False  # the agent ended the conversation (e.g. finalize_order)
    paused: bool = False  # the turn stopped at an interrupt no scripted answer resumed

    def to_dict(self, index: int) -> dict[str, Any]:
        return {"turn": index, "customer": self.customer, "agent": self.reply,
                "tool_calls": self.tool_calls, "state": self.state,
                "finalized": self.finalized, "paused": self.paused}  # fmt: skip


class Session(Protocol):
    """One agent thread: each ``send`` is one customer turn on the same state."""

    async def send(self, text: str) -> AgentTurn: ...

    def output(self) -> dict[str, Any]:
        """The output contract of the thread so far (messages, tool calls, state fields)."""
        ...


@dataclass(frozen=True)
class CustomerView:
    """What a simulated customer knows: the case's goal and persona, and the talk so far."""

    spec: ConversationSpec
    transcript: Sequence[AgentTurn]


class Customer(Protocol):
    version: str  # changes when its behaviour can (part of the memo key)

    async def next_utterance(self, view: CustomerView) -> str | None:
        """The customer's next words, or None when the customer is done."""
        ...


class ConversationFailed(Exception):
    """The agent or the simulated customer failed mid-conversation. ``partial_output``
    keeps the turns played before the failure (the runner records it with the error)."""

    def __init__(self, message: str, partial_output: dict[str, Any]):
        super().__init__(message)
        self.partial_output = partial_output


async def converse(
    session: Session, spec: ConversationSpec, customer: Customer | None
) -> dict[str, Any]:
    """Play the conversation; the output contract plus ``transcript``, ``turns`` and
    ``stop_reason`` (one of STOP_REASONS)."""
    transcript: list[AgentTurn] = []
    stop = "turn_limit"
    for index in range(spec.max_turns):
        if index < len(spec.turns):
            text: str | None = spec.turns[index]
        elif spec.simulated and customer is not None:
            try:
                text = await customer.next_utterance(CustomerView(spec, tuple(transcript)))
            except Exception as exc:
                raise _failed(session, transcript, "simulated customer", exc) from exc
        else:
            text = None
        if text is None:
            stop = "customer_done"
            break
        try:
            turn = await session.send(text)
        except Exception as exc:
            raise _failed(session, transcript, f"agent at turn {index + 1}", exc) from exc
        transcript.append(turn)
        _keep_progress(session, transcript)
        if turn.finalized:
            stop = "agent_finalized"
            break
        if turn.paused:  # (waits for a human the case has no answer from: core/util/interrupts.py)
            stop = "paused"
            break
    else:
        if not spec.simulated:  # the script ran out: that customer has nothing more to say
            stop = "customer_done"
    return session.output() | _conversation_fields(transcript, stop)


def _conversation_fields(transcript: Sequence[AgentTurn], stop: str) -> dict[str, Any]:
    return {
        "transcript": [t.to_dict(i) for i, t in enumerate(transcript, 1)],
        "turns": len(transcript),
        "stop_reason": stop,
    }


def _partial(session: Session, transcript: Sequence[AgentTurn]) -> dict[str, Any]:
    """The output of the turns finished so far, as kept when the conversation fails."""
    try:
        partial = session.output()
    except Exception:  # the thread's state may be unreadable after the failure
        partial = {}
    return partial | _conversation_fields(transcript, "error")


def _keep_progress(session: Session, transcript: Sequence[AgentTurn]) -> None:
    """After each turn: what the item keeps if it is cut off later (the item timeout
    cancels the conversation where no ``except`` can see it)."""
    scope = current_item.get()
    if scope is not None:
        scope.progress["output"] = _partial(session, transcript)


def _failed(
    session: Session, transcript: Sequence[AgentTurn], who: str, exc: Exception
) -> ConversationFailed:
    return ConversationFailed(f"{who} failed: {type(exc).__name__}: {exc}",
                              _partial(session, transcript))  # fmt: skip
