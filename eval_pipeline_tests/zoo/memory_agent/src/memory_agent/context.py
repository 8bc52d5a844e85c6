"""The runtime context: who the user is, which model, which prompt.

After langchain-ai/memory-agent (commit 09bf577, src/memory_agent/context.py), habits kept:
a ``kw_only`` dataclass, ``model`` as "provider/model-name" (the template's default is
Anthropic's; the zoo's is OpenAI's), and ``__post_init__`` replacing each field left at its
default by the environment variable of its upper-cased name (USER_ID, MODEL,
SYSTEM_PROMPT) when one is set.
"""

import os
from dataclasses import dataclass, field, fields
from typing import Annotated

from memory_agent import prompts


@dataclass(kw_only=True)
class Context:
    """What each run of the graph is configured with."""

    user_id: str = "default"
    """Whose memories are read and written."""

    model: Annotated[str, {"__template_metadata__": {"kind": "llm"}}] = field(
        default="anthropic/claude-sonnet-4-5-20250929",
        metadata={"description": "The chat model, written provider/model-name."},
    )

    system_prompt: str = prompts.SYSTEM_PROMPT

    def __post_init__(self) -> None:
        """A field left at its default takes its environment variable, when set."""
        for f in fields(self):
            if f.init and getattr(self, f.name) == f.default:
                setattr(self, f.name, os.environ.get(f.name.upper(), f.default))
