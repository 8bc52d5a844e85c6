"""Langfuse as the prompt registry (langfuse SDK 5).

Evaluation always fetches with ``cache_ttl_seconds=0``: the version under test must be
exactly what the registry holds now, not what this process cached a minute ago.
Label positions are read with ``api.prompts.list(label=…)``, which returns, per prompt,
only the versions carrying that label: one paged listing per watched label covers every
prompt of the project.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import httpx
from langfuse.api.commons.errors.not_found_error import NotFoundError
from langfuse.api.core.api_error import ApiError

from eval_pipeline.agents.langfuse_prompt import unserved
from eval_pipeline.core.prompts.labels import PromptError, PromptVersion
from eval_pipeline.integrations.langfuse_client import LangfuseService, describe_error
from eval_pipeline.integrations.prompt_registry import (
    PLACEHOLDER,
    RegistryUnavailable,
    check_label,
    read_prompt_file,
)

PAGE_SIZE = 100


class LangfusePromptRegistry(LangfuseService):
    def get(self, name: str, version: int) -> PromptVersion:
        return self._fetch(name, version=version)

    def get_by_label(self, name: str, label: str) -> PromptVersion:
        return self._fetch(name, label=label)

    def create(self, name: str, text: str, label: str) -> PromptVersion:
        return self._create(PromptVersion(name, 0, "text", text), labels=[check_label(label)])

    def add(self, name: str, source: Path, label: str | None = None) -> PromptVersion:
        labels = [] if label is None else [check_label(label)]
        return self._create(read_prompt_file(name, source), labels=labels)  # one request

    def _create(self, new: PromptVersion, labels: list[str]) -> PromptVersion:
        try:
            made = self.client.create_prompt(
                # Langfuse overloads a text and a chat prompt; ours is either, said by type=
                name=new.name, prompt=to_langfuse(new), type=new.type, config=new.config,  # type: ignore[arg-type]
                labels=labels,
            )  # fmt: skip
        except (ApiError, httpx.HTTPError) as exc:
            raise RegistryUnavailable(
                f"creating Langfuse prompt {new.name!r}: {describe_error(exc)}"
            ) from exc
        return from_langfuse(made)

    def set_label(self, name: str, version: int, label: str) -> int | None:
        check_label(label)
        previous = next((max(m.versions) for m in self._list(name=name, label=label)
                         if m.name == name and m.versions), None)  # fmt: skip
        self.get(name, version)  # must exist: a clear error, not the server's 404
        self._api(f"labelling Langfuse prompt {name!r} v{version} {label!r}",
                  self.client.api.prompt_version.update,
                  name=quote(name, safe=""), version=version, new_labels=[label])  # fmt: skip
        return previous

    def list_prompts(self) -> list[tuple[str, list[int], dict[str, int]]]:
        listed = list(self._list())
        labels = self.label_versions({label for meta in listed for label in meta.labels})
        return [
            (meta.name, sorted(meta.versions), labels.get(meta.name, {}))
            for meta in sorted(listed, key=lambda meta: meta.name)
        ]

    def _fetch(self, name: str, **which: Any) -> PromptVersion:
        what = " ".join(f"{k} {v!r}" for k, v in which.items())
        try:
            with unserved():  # what the registry holds, even while an agent is served
                fetched = self.client.get_prompt(
                    name, cache_ttl_seconds=0, max_retries=1,
                    # (typed int by Langfuse, used as httpx's timeout: a float is kept whole)
                    fetch_timeout_seconds=self.timeout_s, **which,  # type: ignore[arg-type]
                )  # fmt: skip
        except NotFoundError as exc:
            raise PromptError(f"Langfuse has no prompt {name!r} with {what}") from exc
        except (ApiError, httpx.HTTPError) as exc:
            raise RegistryUnavailable(
                f"Langfuse prompt {name!r} ({what}): {describe_error(exc)}"
            ) from exc
        return from_langfuse(fetched)

    def label_versions(self, labels: Iterable[str]) -> dict[str, dict[str, int]]:
        found: dict[str, dict[str, int]] = {}
        for label in sorted(set(labels)):
            for meta in self._list(label=label):
                if meta.versions:  # one version carries a label; max() guards odd servers
                    found.setdefault(meta.name, {})[label] = max(meta.versions)
        return found

    def _list(self, **filters: Any) -> Iterable[Any]:
        page = 1
        while True:
            response = self._api("listing Langfuse prompts", self.client.api.prompts.list,
                                 page=page, limit=PAGE_SIZE, **filters)  # fmt: skip
            yield from response.data
            if page >= (response.meta.total_pages or 0):
                return
            page += 1

    def _api(self, what: str, call: Callable[..., Any], **arguments: Any) -> Any:
        """One call of the SDK's API client, within our timeout and without retries; an
        error of the server or the network is the registry being unavailable (``what``
        says which call)."""
        try:
            return call(**arguments, request_options={"timeout_in_seconds": self.timeout_s,
                                                      "max_retries": 0})  # fmt: skip
        except (ApiError, httpx.HTTPError) as exc:
            raise RegistryUnavailable(f"{what}: {describe_error(exc)}") from exc


def to_langfuse(prompt: PromptVersion) -> str | list[dict[str, str]]:
    """Our prompt body as Langfuse's: a placeholder message ``{{name}}`` (checked when it
    was read) is its ``{"type": "placeholder", "name": …}`` (the inverse of
    ``from_langfuse``)."""
    if isinstance(prompt.prompt, str):
        return prompt.prompt
    return [
        # (a placeholder message's content is "{{name}}", as from_langfuse makes it)
        {"type": "placeholder", "name": PLACEHOLDER.match(m["content"]).group(1)}  # type: ignore[union-attr]
        if m["role"] == "placeholder"
        else {"role": m["role"], "content": m["content"]}
        for m in prompt.prompt
    ]


def from_langfuse(fetched: Any) -> PromptVersion:
    """A TextPromptClient / ChatPromptClient as our PromptVersion (placeholders kept)."""
    kind: Literal["text", "chat"]
    prompt: str | list[dict[str, str]]
    if isinstance(fetched.prompt, str):
        kind, prompt = "text", fetched.prompt
    else:
        kind = "chat"
        prompt = [
            {"role": m["role"], "content": m["content"]}
            if m.get("type", "message") == "message"
            else {"role": "placeholder", "content": f"{{{{{m['name']}}}}}"}
            for m in fetched.prompt
        ]
    return PromptVersion(
        name=fetched.name,
        version=int(fetched.version),
        type=kind,
        prompt=prompt,
        config=dict(fetched.config or {}),
        labels=tuple(sorted(fetched.labels or ())),
    )
