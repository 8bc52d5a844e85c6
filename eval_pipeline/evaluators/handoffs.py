"""What a handoff is: a call that passes the conversation to another agent, not a tool
that fetches or changes data. langgraph-supervisor's and langgraph-swarm's handoff tools
are named ``transfer_to_<agent>`` (and ``transfer_back_to_<supervisor>``); the handoff-back
messages langgraph-supervisor writes itself carry ``HANDOFF_BACK`` in their response
metadata (langgraph_supervisor/handoff.py, METADATA_KEY_IS_HANDOFF_BACK)."""

from __future__ import annotations

HANDOFF_PREFIXES = ("transfer_to_", "transfer_back_to_")
HANDOFF_BACK = "__is_handoff_back"


def is_handoff(tool_name: str) -> bool:
    return tool_name.startswith(HANDOFF_PREFIXES)
