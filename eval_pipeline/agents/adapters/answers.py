"""What an agent that is not a graph (a callable, an HTTP service) answers.

One item: a dict, the output contract its evaluators read (``output_of``).

A conversation, turn by turn: the transcript so far in, the reply out. Each customer turn
the agent is asked once with::

    {"message": "Actually, make that two",            # what the customer says now
     "history": [{"role": "user", "content": "…"},    # the conversation so far
                 {"role": "assistant", "content": "…"}],
     "turn": 2,                                        # 1 for the first customer turn
     "conversation_id": "mt-qty-01:0"}                 # the same for every turn of one item

as a callable's ``input`` (``fn(input, ctx)``), or as an HTTP agent's POST body. It answers
with a dict (JSON)::

    {"response": "Two hash browns, anything else?",   # what the agent says
     "tool_calls": [{"name": "add_item", "args": {…}}],# optional: this turn's calls
     "state": {"current_order": {…}},                  # optional: what the customer sees
     "done": false}                                    # optional: the agent has finished

``agent: {done_field: state.current_order.finalized}`` reads "finished" elsewhere in the
answer. The agent keeps whatever memory it needs itself (the history is given every turn).
The conversation's output is the same as a graph's: ``messages``, ``tool_calls``,
``tools_called``, ``response``, the last turn's ``state`` fields, and the transcript.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from eval_pipeline.agents.adapters.jsonable import jsonable
from eval_pipeline.core.suites.conversation import AgentTurn

Ask = Callable[[dict[str, Any]], Awaitable[Any]]  # one turn's request -> the agent's answer


class AgentOutputError(TypeError):
    """The agent answered with something that is not an output contract (a dict)."""

    fault = "configuration"


def output_of(answer: Any, target: str) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise AgentOutputError(
            f"{target} returned a {type(answer).__name__}; an agent returns a dict (the output "
            "its evaluators read, e.g. {'response': …, 'tools_called': […]})"
        )
    return jsonable(answer)


class TurnSession:
    """One conversation with an agent asked turn by turn (core/suites/conversation.py Session)."""

    def __init__(self, ask: Ask, conversation_id: str, done_field: str | None, target: str):
        self.ask, self.conversation_id = ask, conversation_id
        self.done_field, self.target = done_field, target
        self.history: list[dict[str, str]] = []
        self.calls: list[dict[str, Any]] = []
        self.state: dict[str, Any] = {}
        self.last = ""

    async def send(self, text: str) -> AgentTurn:
        answer = await self.ask({"message": text, "history": list(self.history),
                                 "turn": len(self.history) // 2 + 1,
                                 "conversation_id": self.conversation_id})  # fmt: skip
        if not isinstance(answer, dict):
            raise AgentOutputError(
                f"{self.target} answered a conversation turn with a {type(answer).__name__}; "
                "answer a dict: {'response': …, 'tool_calls': […], 'state': {…}, 'done': …}"
            )
        reply = str(answer.get("response") or "")
        calls = _calls(answer)
        state = jsonable(answer.get("state") or {})
        self.history += [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]
        self.calls += calls
        self.state, self.last = state if isinstance(state, dict) else {}, reply
        done = _lookup(answer, self.done_field) if self.done_field else answer.get("done")
        return AgentTurn(customer=text, reply=reply, tool_calls=calls, state=self.state,
                         finalized=bool(done))  # fmt: skip

    def output(self) -> dict[str, Any]:
        return {
            **self.state,
            "messages": list(self.history),
            "tool_calls": list(self.calls),
            "tools_called": [c["name"] for c in self.calls],
            "response": self.last,
        }


def _calls(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """This turn's tool calls: ``tool_calls`` as given, else names from ``tools_called``."""
    calls = answer.get("tool_calls")
    if isinstance(calls, list):
        return [{"name": str(c.get("name")), "args": jsonable(c.get("args") or {}),
                 "id": c.get("id")} for c in calls if isinstance(c, dict)]  # fmt: skip
    return [{"name": str(n), "args": {}, "id": None} for n in answer.get("tools_called") or []]


def _lookup(value: Any, path: str) -> Any:
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value
