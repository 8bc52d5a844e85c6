"""The store an item's graph runs with: a fresh in-memory one per item, as the LangGraph
server gives every graph one (``runtime.store``, a node's ``store`` parameter, a tool's
``InjectedStore``), so memories one case writes are never read by another.

Its semantic index is the one ``langgraph.json`` declares (``store.index``), else the one
of the store the graph was compiled with, else none. ``embed: "openai:…"`` is built with
LangChain's ``init_embeddings`` on the agent's own OpenAI settings (OPENAI_BASE_URL /
OPENAI_API_KEY, llm/agent_endpoint.py), asking for embeddings of the text (not of token
ids: nothing is downloaded, and any OpenAI-compatible server answers); the requests are
recorded and replayed like the model's. ``embed: "./file.py:fn"`` or ``"module:fn"`` is the
team's own function.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.pregel import Pregel
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from eval_pipeline.agents.langgraph_json import StoreIndex, module_of
from eval_pipeline.agents.targets import import_target, importable


@dataclass
class StoreSpec:
    """How each item's store is made; the embeddings client is built once, on first use
    (an item: a replay has lent the SDK its key by then)."""

    index: StoreIndex | None = None
    folder: Path | None = None  # where ``./file.py:fn`` is relative to (langgraph.json's)
    _embed: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def fresh(self, graph: Pregel) -> BaseStore:
        if self.index is None:
            return InMemoryStore(index=_compiled_index(graph))
        with self._lock:
            if self._embed is None:
                self._embed = embeddings(self.index.embed, self.folder)
        config: dict[str, Any] = {"dims": self.index.dims, "embed": self._embed}
        if self.index.fields is not None:
            config["fields"] = list(self.index.fields)
        return InMemoryStore(index=config)  # type: ignore[arg-type]

    def __getstate__(self) -> dict[str, Any]:  # (an agent crosses into worker processes)
        return {"index": self.index, "folder": self.folder}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]


def _compiled_index(graph: Pregel) -> Any:
    """The index of the in-memory store the graph was compiled with (None: no index)."""
    store = getattr(graph, "store", None)
    config = getattr(store, "index_config", None) if isinstance(store, InMemoryStore) else None
    if not config:
        return None
    return {"dims": config["dims"], "embed": store.embeddings,  # type: ignore[union-attr]
            "fields": config.get("fields")}  # fmt: skip


def embeddings(embed: str, folder: Path | None) -> Any:
    """``provider:model`` through ``init_embeddings``, or the team's function."""
    location, _, attribute = embed.rpartition(":")
    if location.endswith(".py") or "/" in location:
        module, root = module_of(((folder or Path.cwd()) / location).resolve())
        importable(root)
        return import_target(f"{module}:{attribute}")
    if "." in location:  # package.module:function
        return import_target(embed)
    from langchain.embeddings import init_embeddings

    if location == "openai":  # text, not tiktoken's token ids (tiktoken downloads its tables)
        return init_embeddings(embed, check_embedding_ctx_length=False)
    return init_embeddings(embed)
