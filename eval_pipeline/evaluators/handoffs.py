"""What a handoff is: a call that passes the conversation to another agent, not a tool
that fetches or changes data. langgraph-supervisor's and langgraph-swarm's handoff tools
are named ``transfer_to_<agent>`` (and ``transfer_back_to_<supervisor>``); the handoff-back
messages langgraph-supervisor writes itself carry ``HANDOFF_BACK`` in their response
metadata (langgraph_supervisor/handoff.py, METADATA_KEY_IS_HANDOFF_BACK).

A graph's output marks each of its ``tool_calls`` with its ``kind`` (agents/adapters/
graph.py): a handoff of another name (a tool of the team's own returning
``Command(goto=agent, graph=Command.PARENT)``, swarm's ``ask_alice``) is a handoff there,
and ``handoffs_made`` reads it from there; ``is_handoff`` is the rule by name, for what
carries no marks (a reference trajectory, a callable agent's output)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HANDOFF_PREFIXES = ("transfer_to_", "transfer_back_to_")
HANDOFF_BACK = "__is_handoff_back"


def is_handoff(tool_name: str) -> bool:
    return tool_name.startswith(HANDOFF_PREFIXES)


def handoffs_made(output: Any) -> list[str]:
    """The names of the handoffs an output's ``tool_calls`` mark as such, in call order."""
    calls = output.get("tool_calls") if isinstance(output, Mapping) else None
    return [str(c.get("name")) for c in calls or []
            if isinstance(c, Mapping) and c.get("kind") == "handoff"]  # fmt: skip
