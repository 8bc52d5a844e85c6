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
        """Fill ``{{var}}`` placeholders of the system text (Langfuse syntax). One the agent
        does not fill is refused: it was sent to the model as the text ``{{var}}``."""
        text = self.system_text()
        if missing := sorted({m.group(1) for m in VARIABLE.finditer(text)} - set(variables)):
            given = ", ".join(sorted(variables)) or "none"
            raise PromptError(
                f"prompt {self.name} v{self.version}: {{{{{missing[0]}}}}} is not filled (the "
                f"agent fills: {given}); pass {missing[0]}=… to ctx.system_prompt(), or "
                "remove it from the prompt"
            )
        return VARIABLE.sub(lambda m: str(variables[m.group(1)]), text)


def parse_version_key(key: str) -> int:
    """'v3' (partition key) or '3' → 3."""
    text = key[1:] if key.lower().startswith("v") else key
    if not text.isdigit():
        raise PromptError(f"not a prompt version: {key!r} (expected e.g. 'v3')")
    return int(text)
