"""What the runner needs from an agent under test (agents implement it, core calls it)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from eval_pipeline.core.cases import GoldenCase


@dataclass
class AgentResult:
    """One agent invocation: the output contract dict plus token usage."""

    output: dict[str, Any]
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""


class Agent(Protocol):
    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        """Run one case. ``callbacks`` are LangChain callbacks to attach (e.g. tracing)."""
        ...


def item_seed(case_id: str, repeat: int, base: int = 0) -> int:
    """Stable per-item, per-repeat seed (Python's hash() is salted per process)."""
    digest = hashlib.sha256(f"{base}:{case_id}:{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big")
