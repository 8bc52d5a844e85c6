"""Human-in-the-loop: what a case scripts the human to answer at the agent's interrupts,
and the rule for scoring an item that stopped at one.

A LangGraph agent waits for a human with ``interrupt(payload)``. A case scripts the answers
in its input::

    input:
      message: Refund order A100 please
      resume:                      # the answers, in the order the interrupts come
        - {approved: true}

or, per interrupt name, each name's answers in order::

      resume:
        refund: [{approved: true}]
        confirm_address: ["yes"]

An interrupt's name is its payload's ``name``, ``action`` or ``type`` (a string), the
action of a prebuilt ``HumanInterrupt`` (``action_request.action``) or of LangChain's
human-in-the-loop middleware (``action_requests[0].name``), else the node that
interrupted. The graph adapter resumes with ``Command(resume=answer)`` until the graph
ends or the script has no answer for an interrupt: the item then ends **paused**.

The rule (``pause_problem``): an item's pause must match what the case expects. A case
expects the pause with ``expected_output: {paused: true}`` ("a refund over $500 waits for
approval"); otherwise it expects the agent to finish. An item that paused where the case
expects an answer, or finished where the case expects a pause, scores 0 on every
evaluator with the reason as the comment, and counts in the gate like a wrong answer. An
item whose pause matches is scored by the evaluators as usual; they read ``paused`` and
``interrupts`` in the output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

RESUME_FIELD = "resume"  # in a case's input
PAUSED_FIELD = "paused"  # in a case's expected_output, and in the output contract
INTERRUPTS_FIELD = "interrupts"  # in the output contract


def interrupt_name(payload: Any, node: str | None = None) -> str | None:
    """The name a case's ``resume`` mapping answers an interrupt by (see the module)."""
    if isinstance(payload, list) and payload and isinstance(payload[0], Mapping):
        payload = payload[0]  # (LangGraph's docs send ``interrupt([request])``)
    if isinstance(payload, Mapping):
        for key in ("name", "action", "type"):
            if isinstance(name := payload.get(key), str):
                return name
        request = payload.get("action_request")
        if isinstance(request, Mapping) and isinstance(action := request.get("action"), str):
            return action
        requests = payload.get("action_requests")
        first = requests[0] if isinstance(requests, list) and requests else None
        if isinstance(first, Mapping) and isinstance(name := first.get("name"), str):
            return name
    return node


def resume_problems(case_input: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, problem) for a ``resume`` that is neither a list of answers nor a mapping
    of names to lists of answers."""
    raw = case_input.get(RESUME_FIELD)
    where = f"input.{RESUME_FIELD}"
    if raw is None or isinstance(raw, list):
        return []
    if not isinstance(raw, Mapping):
        return [(where, f"a list of answers in order, or a mapping of interrupt names to "
                        f"lists of answers; got {type(raw).__name__}")]  # fmt: skip
    return [
        (f"{where}.{name}", f"a list of answers in order (write [{value!r:.40}] for one "
                            f"answer); got {type(value).__name__}")
        for name, value in raw.items() if not isinstance(value, list)
    ]  # fmt: skip


@dataclass
class ResumeScript:
    """The answers a case scripts, consumed as the interrupts come."""

    in_order: list[Any] = field(default_factory=list)
    by_name: dict[str, list[Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, case_input: Any) -> ResumeScript:
        raw = case_input.get(RESUME_FIELD) if isinstance(case_input, Mapping) else None
        if isinstance(raw, Mapping):
            return cls(by_name={str(k): list(v) for k, v in raw.items()})
        return cls(in_order=list(raw or []))

    def __bool__(self) -> bool:
        return bool(self.in_order or self.by_name)

    def answers(self, names: Sequence[str | None]) -> list[Any] | None:
        """One answer for each pending interrupt (by name), taken from the script; None,
        taking nothing, when the script has no answer for one of them."""
        if self.by_name:
            wanted: dict[str, int] = {}
            for name in names:
                wanted[str(name)] = wanted.get(str(name), 0) + 1
            if any(len(self.by_name.get(n, [])) < k for n, k in wanted.items()):
                return None
            return [self.by_name[str(name)].pop(0) for name in names]
        if len(self.in_order) < len(names):
            return None
        return [self.in_order.pop(0) for _ in names]


def pause_problem(expected_output: Any, output: Any) -> str | None:
    """Why an item scores 0 whatever its evaluators say (the rule in the module's
    docstring), or None when its pause matches what the case expects."""
    paused = bool(output.get(PAUSED_FIELD)) if isinstance(output, Mapping) else False
    expected = isinstance(expected_output, Mapping) and expected_output.get(PAUSED_FIELD) is True
    if paused and not expected:
        waiting = [i for i in output.get(INTERRUPTS_FIELD) or [] if "answer" not in i]
        name = next((i.get("name") for i in waiting if i.get("name")), None)
        at = f" at interrupt '{name}'" if name else " at an interrupt"
        return (f"paused{at} with no scripted answer: the agent never finished; script the "
                f"human's answer in the case's input.{RESUME_FIELD}, or expect the pause with "
                f"expected_output.{PAUSED_FIELD}: true")  # fmt: skip
    if expected and not paused:
        return (
            "finished without pausing, but the case expects it to stop at an interrupt "
            f"(expected_output.{PAUSED_FIELD}: true)"
        )
    return None
