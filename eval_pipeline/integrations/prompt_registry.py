"""Prompt registries: where the prompt versions under evaluation come from.

``LocalPromptRegistry`` is the embedded default: ``prompts/<name>/v<N>.yaml`` files
(``type: text|chat``, ``prompt``, ``config``) plus ``prompts/labels.yaml``, which maps
each prompt name to ``{label: version}``. It mirrors Langfuse's prompt model so a team
can start locally (with git history of its prompts) and move to Langfuse later.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import yaml

from eval_pipeline.core.errors import ServiceError
from eval_pipeline.core.prompts.labels import (
    LABEL,
    LABEL_RULE,
    VARIABLE,
    PromptError,
    PromptVersion,
)
from eval_pipeline.core.util import safe_yaml


class RegistryUnavailable(ServiceError):
    """The registry could not be reached or answered with an error (retry later)."""


PROMPT_NAME = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
PLACEHOLDER = re.compile(rf"^{VARIABLE.pattern}$")  # a chat placeholder message's content


class PromptRegistry(Protocol):
    """What the pipeline needs from a prompt registry (Langfuse or local files)."""

    @property
    def description(self) -> str: ...

    def get(self, name: str, version: int) -> PromptVersion: ...

    def get_by_label(self, name: str, label: str) -> PromptVersion: ...

    def label_versions(self, labels: Iterable[str]) -> dict[str, dict[str, int]]:
        """``{prompt name: {label: version}}`` for the given labels, across all prompts."""
        ...

    def create(self, name: str, text: str, label: str) -> PromptVersion:
        """A new version of text prompt ``name`` holding ``text``, labelled ``label``."""
        ...

    def list_prompts(self) -> list[tuple[str, list[int], dict[str, int]]]:
        """(name, versions, {label: version}) of every prompt, by name."""
        ...

    def set_label(self, name: str, version: int, label: str) -> int | None:
        """Point ``label`` at ``version`` (moving it if set); returns the previous version."""
        ...

    def add(self, name: str, source: Path, label: str | None = None) -> PromptVersion:
        """Store ``source`` (``read_prompt_file``) as the next version of ``name``, with
        ``label`` pointed at it; nothing is written when either is invalid."""
        ...


class LocalPromptRegistry:
    """File-backed registry: read versions and labels, add versions, move labels."""

    def __init__(self, root: Path):
        self.root = Path(root)

    @property
    def description(self) -> str:
        return f"local ({self.root})"

    def label_versions(self, labels: Iterable[str]) -> dict[str, dict[str, int]]:
        wanted = set(labels)
        try:
            everything = self._all_labels()
        except PromptError as exc:  # a half-edited labels file: try again next tick
            raise RegistryUnavailable(str(exc)) from exc
        found = {
            name: {label: v for label, v in by_label.items() if label in wanted}
            for name, by_label in everything.items()
        }
        return {name: by_label for name, by_label in found.items() if by_label}

    @property
    def labels_file(self) -> Path:
        return self.root / "labels.yaml"

    def _all_labels(self) -> dict[str, dict[str, int]]:
        if not self.labels_file.exists():
            return {}
        data = _load_yaml(self.labels_file)
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise PromptError(f"{self.labels_file}: expected 'prompt name: {{label: version}}'")
        for name, by_label in data.items():
            for label, version in by_label.items():
                if not isinstance(label, str) or not LABEL.match(label):
                    raise PromptError(  # Langfuse would refuse it: the move would fail later
                        f"{self.labels_file}: {name}: {label!r} is not a label: use "
                        f"{LABEL_RULE}, as Langfuse does"
                    )
                if isinstance(version, bool) or not isinstance(version, int) or version < 1:
                    raise PromptError(
                        f"{self.labels_file}: {name}: {label}: {version!r} is not a version "
                        f"number (1, 2, …); point the label at one of {name}'s versions, or "
                        f"use `eval-pipeline prompts label {name} VERSION {label}`"
                    )
        return data

    def labels(self, name: str) -> dict[str, int]:
        return dict(self._all_labels().get(name, {}))

    def folder(self, name: str) -> Path:
        """Where prompt ``name``'s versions live: a folder inside the registry, whatever the
        name (``../../x`` or ``/etc`` would write outside it: refused)."""
        parts = name.split("/")
        if not PROMPT_NAME.match(name) or any(part in {"", ".", ".."} for part in parts):
            raise PromptError(f"prompt name {name!r}: use letters, digits, '.', '_' and '-', "
                              "with '/' between parts (e.g. drive-thru/orchestrator); it names "
                              f"a folder inside {self.root}")  # fmt: skip
        return self.root.joinpath(*parts)

    def versions(self, name: str) -> list[int]:
        folder = self.folder(name)
        found = []
        for path in folder.glob("v*.yaml"):
            digits = path.stem[1:]
            if digits.isdigit():
                found.append(int(digits))
        return sorted(found)

    def get(self, name: str, version: int) -> PromptVersion:
        path = self.folder(name) / f"v{version}.yaml"
        if not path.exists():
            known = ", ".join(f"v{v}" for v in self.versions(name)) or "none"
            raise PromptError(
                f"prompt {name!r} has no version {version} in {self.root} (versions: {known})"
            )
        labels = tuple(sorted(k for k, v in self.labels(name).items() if v == version))
        return _parse(path, _load_yaml(path), name, version, labels)

    def get_by_label(self, name: str, label: str) -> PromptVersion:
        labels = self.labels(name)
        if label not in labels:
            raise PromptError(
                f"prompt {name!r} has no label {label!r} in {self.labels_file} "
                f"(labels: {', '.join(sorted(labels)) or 'none'})"
            )
        return self.get(name, labels[label])

    def list_prompts(self) -> list[tuple[str, list[int], dict[str, int]]]:
        """(name, versions, labels) of every prompt with at least one version file."""
        names = sorted({str(p.parent.relative_to(self.root)) for p in self.root.rglob("v*.yaml")})
        return [(n, self.versions(n), self.labels(n)) for n in names if self.versions(n)]

    def set_label(self, name: str, version: int, label: str) -> int | None:
        self.get(name, version)  # must exist and be valid
        check_label(label)
        everything = self._all_labels()
        previous = everything.setdefault(name, {}).get(label)
        everything[name][label] = version
        header = "# Which version each label points to, per prompt (written by eval-pipeline).\n"
        self.labels_file.write_text(header + yaml.safe_dump(everything, sort_keys=True))
        return previous

    def create(self, name: str, text: str, label: str) -> PromptVersion:
        return self._add(PromptVersion(name, 0, "text", text), label)

    def add(self, name: str, source: Path, label: str | None = None) -> PromptVersion:
        return self._add(read_prompt_file(name, source), label)

    def _add(self, new: PromptVersion, label: str | None) -> PromptVersion:
        if label is not None:
            check_label(label)  # before anything is written
        version = self._write(new)
        if label is not None:
            self.set_label(new.name, version, label)
        return self.get(new.name, version)

    def _write(self, new: PromptVersion) -> int:
        """``new`` stored as the next version of its prompt: that version's number."""
        version = max(self.versions(new.name), default=0) + 1
        target = self.folder(new.name) / f"v{version}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        body = {"type": new.type, "config": new.config, "prompt": new.prompt}
        target.write_text(yaml.safe_dump(body, sort_keys=False, allow_unicode=True))
        return version


def read_prompt_file(name: str, source: Path) -> PromptVersion:
    """``source`` as a new (not yet numbered: version 0) version of prompt ``name``, checked
    before any registry is written: a .yaml/.yml file holds type, prompt and config; any
    other file is the text of a text prompt."""
    if source.suffix in {".yaml", ".yml"}:
        data = _load_yaml(source)
    else:
        try:
            data = {"type": "text", "prompt": source.read_text(encoding="utf-8")}
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptError(f"{source}: cannot read: {exc}") from exc
    return _parse(source, data, name, 0, ())


def check_label(label: str) -> str:
    """A label both registries accept, checked before anything is written: Langfuse's rule,
    and not ``latest``, which Langfuse keeps on the newest version itself."""
    if not LABEL.match(label):
        raise PromptError(f"invalid label {label!r}: use {LABEL_RULE}")
    if label == "latest":
        raise PromptError("label 'latest' always points at the newest version (Langfuse "
                          "moves it): choose another label, e.g. staging")  # fmt: skip
    return label


def _parse(
    path: Path, data: Any, name: str, version: int, labels: tuple[str, ...]
) -> PromptVersion:
    if not isinstance(data, dict) or "prompt" not in data:
        raise PromptError(f"{path}: expected a mapping with 'type', 'prompt' and 'config'")
    kind = data.get("type", "text")
    prompt = data["prompt"]
    valid_chat = (
        kind == "chat"
        and isinstance(prompt, list)
        and all(isinstance(m, dict) and "role" in m and isinstance(m.get("content"), str)
                and (m["role"] != "placeholder" or PLACEHOLDER.match(m["content"]))
                for m in prompt)
    )  # fmt: skip
    if not (valid_chat or (kind == "text" and isinstance(prompt, str))):
        raise PromptError(
            f"{path}: field 'prompt': a text prompt is a string, a chat prompt a list of "
            "{role, content} messages (content a string; a placeholder message's content is "
            "exactly {{name}})"
        )
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise PromptError(f"{path}: field 'config': expected a mapping")
    return PromptVersion(
        name=name, version=version, type=kind, prompt=prompt, config=config, labels=labels
    )


def _load_yaml(path: Path) -> Any:
    try:
        return safe_yaml.load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PromptError(f"{path}: cannot read: {exc}") from exc
