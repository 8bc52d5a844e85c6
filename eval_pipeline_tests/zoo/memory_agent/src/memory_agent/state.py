"""The graph's state: a dataclass with the conversation's messages.

After langchain-ai/memory-agent (commit 09bf577, src/memory_agent/state.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.graph import add_messages


@dataclass(kw_only=True)
class State:
    """The messages of the conversation so far."""

    messages: Annotated[list[AnyMessage], add_messages]


__all__ = ["State"]
