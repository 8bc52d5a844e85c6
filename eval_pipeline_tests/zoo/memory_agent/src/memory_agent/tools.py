"""The agent's one tool: save (or overwrite) a memory in the store.

After langchain-ai/memory-agent (commit 09bf577, src/memory_agent/tools.py), habits kept: a
plain ``async def`` whose ``user_id`` and ``store`` are ``InjectedToolArg`` (the model never
sees them), a new memory keyed by ``uuid4()``, and the id in the answer the model reads
back: ``Stored memory <uuid>``.
"""

import uuid
from typing import Annotated

from langchain_core.tools import InjectedToolArg
from langgraph.store.base import BaseStore


async def upsert_memory(
    content: str,
    context: str,
    *,
    memory_id: uuid.UUID | None = None,
    user_id: Annotated[str, InjectedToolArg],
    store: Annotated[BaseStore, InjectedToolArg],
) -> str:
    """Save a memory about the user, or update one by passing its memory_id.

    Args:
        content: The fact itself, e.g. "User loves hiking."
        context: Where it came up, e.g. "Said while introducing themselves."
        memory_id: Only to overwrite an existing memory.
    """
    key = memory_id or uuid.uuid4()
    await store.aput(("memories", user_id), key=str(key),
                     value={"content": content, "context": context})
    return f"Stored memory {key}"
