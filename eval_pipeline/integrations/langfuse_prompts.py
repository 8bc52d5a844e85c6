"""Langfuse as the prompt registry (langfuse SDK 5).

Evaluation always fetches with ``cache_ttl_seconds=0``: the version under test must be
exactly what the registry holds now, not what this process cached a minute ago.
Label positions are read with ``api.prompts.list(label=…)``, which returns, per prompt,
only the versions carrying that label: one paged listing per watched label covers every
prompt of the project.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx
from langfuse.api.commons.errors.not_found_error import NotFoundError
from langfuse.api.core.api_error import ApiError

from eval_pipeline.agents.langfuse_prompt import unserved
from eval_pipeline.core.prompts import PromptError, PromptVersion
from eval_pipeline.integrations.langfuse_client import LangfuseService, describe_error
from eval_pipeline.integrations.prompt_registry import RegistryUnavailable

PAGE_SIZE = 100


class LangfusePromptRegistry(LangfuseService):
    def get(self, name: str, version: int) -> PromptVersion:
        return self._fetch(name, version=version)

    def get_by_label(self, name: str, label: str) -> PromptVersion:
        return self._fetch(name, label=label)

    def create(self, name: str, text: str, label: str) -> PromptVersion:
        try:
            made = self.client.create_prompt(name=name, prompt=text, type="text", labels=[label])
        except (ApiError, httpx.HTTPError) as exc:
            raise RegistryUnavailable(
                f"creating Langfuse prompt {name!r}: {describe_error(exc)}"
            ) from exc
        return from_langfuse(made)

    def _fetch(self, name: str, **which: Any) -> PromptVersion:
        what = " ".join(f"{k} {v!r}" for k, v in which.items())
        try:
            with unserved():  # what the registry holds, even while an agent is served
                fetched = self.client.get_prompt(
                    name, cache_ttl_seconds=0, max_retries=1,
                    fetch_timeout_seconds=self.timeout_s, **which,
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
            try:
                response = self.client.api.prompts.list(
                    page=page, limit=PAGE_SIZE, **filters,
                    request_options={"timeout_in_seconds": self.timeout_s, "max_retries": 0},
                )  # fmt: skip
            except (ApiError, httpx.HTTPError) as exc:
                raise RegistryUnavailable(
                    f"listing Langfuse prompts: {describe_error(exc)}"
                ) from exc
            yield from response.data
            if page >= (response.meta.total_pages or 0):
                return
            page += 1


def from_langfuse(fetched: Any) -> PromptVersion:
    """A TextPromptClient / ChatPromptClient as our PromptVersion (placeholders kept)."""
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
