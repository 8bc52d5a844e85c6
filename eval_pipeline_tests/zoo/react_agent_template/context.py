"""Define the configurable parameters for the agent.

Part of the zoo's copy of the langchain-ai/react-agent template (commit d89d249c2a76,
src/react_agent/context.py), kept as the template has it except: the relative import it
already had stays, and the default model is "openai/gpt-4o-mini" (the template's is
"anthropic/claude-sonnet-4-5-20250929"). Note the template's ``__post_init__``: every field
left at its default is replaced by the environment variable of its upper-cased name
(SYSTEM_PROMPT, MODEL, MAX_SEARCH_RESULTS) when that variable is set.
"""

# ruff: noqa: E501 (the template's own ruff config ignores these)

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Annotated

from . import prompts


@dataclass(kw_only=True)
class Context:
    """The context for the agent."""

    system_prompt: str = field(
        default=prompts.SYSTEM_PROMPT,
        metadata={
            "description": "The system prompt to use for the agent's interactions. "
            "This prompt sets the context and behavior for the agent."
        },
    )

    model: Annotated[str, {"__template_metadata__": {"kind": "llm"}}] = field(
        default="openai/gpt-4o-mini",
        metadata={
            "description": "The name of the language model to use for the agent's main interactions. "
            "Should be in the form: provider/model-name."
        },
    )

    max_search_results: int = field(
        default=10,
        metadata={
            "description": "The maximum number of search results to return for each search query."
        },
    )

    def __post_init__(self) -> None:
        """Fetch env vars for attributes that were not passed as args."""
        for f in fields(self):
            if not f.init:
                continue

            if getattr(self, f.name) == f.default:
                setattr(self, f.name, os.environ.get(f.name.upper(), f.default))
