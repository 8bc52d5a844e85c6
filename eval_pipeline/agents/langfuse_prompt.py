"""An agent that fetches its own prompt from Langfuse gets the version under test.

Many agents read their system prompt the way Langfuse's docs show it, inside a node or a
factory: ``Langfuse().get_prompt("drive-thru/orchestrator", label="production")``, with a
fallback text when the fetch fails. Evaluated as they are, such agents would always run
the production version (or, with no Langfuse keys, their fallback): prompt labels would
mean nothing for them, and a staging run would silently test production.

So while a run's agent is built and while its items run (``serving``), the Langfuse
client's ``get_prompt`` answers a request for the suite's prompt with the version under
test, whatever label it names, wherever the registry lives (Langfuse or local files),
without a network call; the agent then counts as having read the prompt. A request that
pins a ``version=``, or names another prompt, goes to Langfuse as usual. Outside a run
nothing changes. (A prompt fetched at import time, before any run, cannot be served: fetch
it inside the factory or the node.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eval_pipeline.agents.context import AgentContext

_SERVING: ContextVar[AgentContext | None] = ContextVar("eval_prompt_under_test", default=None)
_INSTALLED = threading.Lock()
_installed = False


@contextmanager
def serving(ctx: AgentContext) -> Iterator[None]:
    """While inside, ``get_prompt`` of the suite's prompt returns ``ctx``'s version (also in
    the worker threads LangGraph runs sync nodes in: they copy this context)."""
    if ctx.prompt_version is None:
        yield
        return
    _install()
    token = _SERVING.set(ctx)
    try:
        yield
    finally:
        _SERVING.reset(token)


@contextmanager
def unserved() -> Iterator[None]:
    """``get_prompt`` as Langfuse answers it (our own prompt registry reads through it)."""
    token = _SERVING.set(None)
    try:
        yield
    finally:
        _SERVING.reset(token)


def _install() -> None:
    """Wrap ``Langfuse.get_prompt`` once per process (a no-op outside ``serving``)."""
    global _installed
    with _INSTALLED:
        if _installed:
            return
        from langfuse import Langfuse

        original = Langfuse.get_prompt

        def get_prompt(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
            served = _served(name, kwargs)
            return served if served is not None else original(self, name, *args, **kwargs)

        get_prompt.__doc__ = original.__doc__
        Langfuse.get_prompt = get_prompt  # type: ignore[method-assign]
        _installed = True


def _served(name: str, kwargs: dict[str, Any]) -> Any:
    ctx = _SERVING.get()
    if ctx is None or ctx.prompt_version is None or name != ctx.prompt_version.name:
        return None
    if kwargs.get("version") is not None:  # the agent pinned a version: not the one on test
        return None
    return prompt_client(ctx.prompt)  # (reading ctx.prompt marks it read)


def prompt_client(prompt: Any) -> Any:
    """Our PromptVersion as the SDK's TextPromptClient / ChatPromptClient."""
    from langfuse.api import Prompt_Chat, Prompt_Text
    from langfuse.model import ChatPromptClient, TextPromptClient

    fields = {"name": prompt.name, "version": prompt.version, "config": dict(prompt.config),
              "labels": list(prompt.labels), "tags": []}  # fmt: skip
    if prompt.type == "chat":
        return ChatPromptClient(Prompt_Chat.model_validate({**fields, "prompt": prompt.prompt}))
    return TextPromptClient(Prompt_Text(**fields, prompt=str(prompt.prompt)))
