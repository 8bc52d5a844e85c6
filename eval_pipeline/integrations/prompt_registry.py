"""Prompt registries: where the prompt versions under evaluation come from.

``LocalPromptRegistry`` is the embedded default: ``prompts/<name>/v<N>.yaml`` files
(``type: text|chat``, ``prompt``, ``config``) plus ``prompts/labels.yaml``, which maps
each prompt name to ``{label: version}``. It mirrors Langfuse's prompt model so a team
can start locally (with git history of its prompts) and move to Langfuse later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import yaml

from eval_pipeline.core.prompts import PromptError, PromptVersion


class PromptRegistry(Protocol):
    def get(self, name: str, version: int) -> PromptVersion: ...

    def labels(self, name: str) -> dict[str, int]: ...


class LocalPromptRegistry:
    """File-backed registry (read side)."""

    def __init__(self, root: Path):
        self.root = Path(root)

    @property
    def labels_file(self) -> Path:
        return self.root / "labels.yaml"

    def _all_labels(self) -> dict[str, dict[str, int]]:
        if not self.labels_file.exists():
            return {}
        data = _load_yaml(self.labels_file)
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise PromptError(f"{self.labels_file}: expected 'prompt name: {{label: version}}'")
        return data

    def labels(self, name: str) -> dict[str, int]:
        return {label: int(v) for label, v in self._all_labels().get(name, {}).items()}

    def versions(self, name: str) -> list[int]:
        folder = self.root / name
        found = []
        for path in folder.glob("v*.yaml"):
            digits = path.stem[1:]
            if digits.isdigit():
                found.append(int(digits))
        return sorted(found)

    def get(self, name: str, version: int) -> PromptVersion:
        path = self.root / name / f"v{version}.yaml"
        if not path.exists():
            known = ", ".join(f"v{v}" for v in self.versions(name)) or "none"
            raise PromptError(
                f"prompt {name!r} has no version {version} in {self.root} (versions: {known})"
            )
        data = _load_yaml(path)
        if not isinstance(data, dict) or "prompt" not in data:
            raise PromptError(f"{path}: expected a mapping with 'type', 'prompt' and 'config'")
        kind = data.get("type", "text")
        prompt = data["prompt"]
        valid_chat = (
            kind == "chat"
            and isinstance(prompt, list)
            and all(isinstance(m, dict) and "role" in m and "content" in m for m in prompt)
        )
        if not (valid_chat or (kind == "text" and isinstance(prompt, str))):
            raise PromptError(
                f"{path}: field 'prompt': a text prompt is a string, a chat prompt a list of "
                "{role, content} messages"
            )
        config = data.get("config") or {}
        if not isinstance(config, dict):
            raise PromptError(f"{path}: field 'config': expected a mapping")
        labels = tuple(sorted(k for k, v in self.labels(name).items() if v == version))
        return PromptVersion(
            name=name, version=version, type=kind, prompt=prompt, config=config, labels=labels
        )

    def get_by_label(self, name: str, label: str) -> PromptVersion:
        labels = self.labels(name)
        if label not in labels:
            raise PromptError(
                f"prompt {name!r} has no label {label!r} in {self.labels_file} "
                f"(labels: {', '.join(sorted(labels)) or 'none'})"
            )
        return self.get(name, labels[label])


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PromptError(f"{path}: cannot read: {exc}") from exc
