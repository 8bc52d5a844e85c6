"""The prompt a run evaluates: a plain value type shared by registries and agents."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.suites.cases import content_hash

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")  # a {{variable}} (Langfuse syntax)
# A label both registries accept: Langfuse's rule (PROMPT_LABEL_REGEX, 36 at most).
LABEL = re.compile(r"^[a-z0-9_.-]{1,36}$")
LABEL_RULE = "at most 36 lowercase letters, digits, '-', '_' or '.' (e.g. staging)"


class PromptError(ConfigurationError):
    """A prompt is missing, malformed or cannot be compiled."""


@dataclass(frozen=True)
class PromptVersion:
    """One immutable version of a named prompt (Langfuse's model: text or chat)."""

    name: str
    version: int
    type: Literal["text", "chat"]
    prompt: str | list[dict[str, str]]
    config: dict[str, Any] = field(default_factory=dict)
    labels: tuple[str, ...] = ()

    @property
    def content_hash(self) -> str:
        return content_hash({"type": self.type, "prompt": self.prompt, "config": self.config})

    @property
    def partition_key(self) -> str:
        return f"v{self.version}"

    def system_text(self) -> str:
        """The system instructions: the text prompt, or a chat prompt's system message(s)."""
        if isinstance(self.prompt, str):
            return self.prompt
        parts = [m.get("content", "") for m in self.prompt if m.get("role") == "system"]
        if not parts:
            raise PromptError(f"chat prompt {self.name} v{self.version} has no system message")
        return "\n\n".join(parts)

    def compile(self, **variables: str) -> str:
        """Fill ``{{var}}`` placeholders of the system text (Langfuse syntax); unknown ones stay."""
        return VARIABLE.sub(
            lambda m: str(variables.get(m.group(1), m.group(0))), self.system_text()
        )


def parse_version_key(key: str) -> int:
    """'v3' (partition key) or '3' → 3."""
    text = key[1:] if key.lower().startswith("v") else key
    if not text.isdigit():
        raise PromptError(f"not a prompt version: {key!r} (expected e.g. 'v3')")
    return int(text)
