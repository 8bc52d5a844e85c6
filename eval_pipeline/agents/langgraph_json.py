"""A LangGraph project's ``langgraph.json``, read as the LangGraph CLI reads it.

A team that deploys on the LangGraph Platform declares its graphs there, the store and
checkpointer the server gives them, the environment and the code's dependencies
(langgraph_cli/config.py and schemas.py: ``graphs``, ``store``, ``checkpointer``, ``env``,
``dependencies``). When the project file has one beside it, eval-pipeline runs the graphs
the way the server would:

- ``graphs``: ``{"agent": "./src/memory_agent/graph.py:graph"}`` (a file relative to the
  json, or ``package.module:attribute``; or ``{"path": …}``): each becomes an import path
  (``memory_agent.graph:graph``); ``init --agent agent`` takes the graph's id;
- ``dependencies``: each local one (``"."``, ``"./libs/x"``) is importable, and so is its
  ``src/`` (LangChain's templates' layout), without installing it;
- ``store``: every item gets a fresh in-memory store with the declared ``index`` (its
  ``embed``: ``provider:model`` through LangChain's ``init_embeddings``, or a function of the
  team's own); ``checkpointer``: every item a fresh in-memory checkpointer (a custom
  ``path`` is not opened: an evaluation's threads never outlive their item);
- ``env``: a ``.env`` file or a mapping; its variables are set for the agent where the
  environment has none (llm/agent_endpoint.py says in what order).

Other keys (``python_version``, ``dockerfile_lines``, ``auth``, ``http``, …) are the
deployment's and are not read. A file that cannot be read is a project error naming the
file, the field and the value (exit 2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval_pipeline.agents.project_errors import ProjectError

FILE = "langgraph.json"
JS = {".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"}  # langgraph_cli's node graphs: not ours
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)\s*=\s*(.*?)\s*$")


@dataclass(frozen=True)
class StoreIndex:
    """``store.index``: how the store embeds what it keeps, for semantic search."""

    dims: int
    embed: str  # "provider:model", or "path/to/file.py:function" / "module:function"
    fields: tuple[str, ...] | None = None


@dataclass(frozen=True)
class LangGraphJson:
    path: Path
    graphs: dict[str, str]  # graph id → package.module:attribute
    roots: tuple[Path, ...]  # folders the graphs' code imports from
    store: bool = False  # declared: the server's store is configured
    index: StoreIndex | None = None
    checkpointer: bool = False
    env: dict[str, str] = field(default_factory=dict)

    def graph_id(self, import_path: str) -> str | None:
        """The id a graph is declared under, from its import path."""
        return next((name for name, path in self.graphs.items() if path == import_path), None)


def find(folder: Path) -> LangGraphJson | None:
    """``langgraph.json`` in ``folder``, read; None when there is none."""
    path = folder / FILE
    return read(path) if path.is_file() else None


def read(path: Path) -> LangGraphJson:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProjectError([f"{path}: not a JSON file LangGraph can read: {exc}"]) from None
    if not isinstance(raw, dict):
        raise ProjectError([f"{path}: expected a JSON object (LangGraph's langgraph.json)"])
    problems: list[str] = []
    folder = path.parent
    roots = _dependency_roots(path, raw.get("dependencies") or [], problems)
    graphs: dict[str, str] = {}
    declared = raw.get("graphs")
    if not isinstance(declared, dict) or not declared:
        problems.append(f"{path}: field 'graphs': give at least one graph, "
                        '{"agent": "./path/to/file.py:graph"}')  # fmt: skip
        declared = {}
    for name, spec in declared.items():
        found = _graph(path, name, spec, problems)
        if found is not None:
            graphs[name], root = found
            if root is not None and root not in roots:
                roots.append(root)
    store = raw.get("store")
    index = _index(path, store, problems) if store is not None else None
    checkpointer = raw.get("checkpointer")
    if checkpointer is not None and not isinstance(checkpointer, dict):
        problems.append(f"{path}: field 'checkpointer': expected an object (got "
                        f"{json.dumps(checkpointer)[:60]})")  # fmt: skip
    env = _env(path, raw.get("env"), problems)
    if problems:
        raise ProjectError(problems)
    return LangGraphJson(path, graphs, tuple(roots or [folder]), store is not None, index,
                         checkpointer is not None, env)  # fmt: skip


def _dependency_roots(path: Path, dependencies: Any, problems: list[str]) -> list[Path]:
    """The local dependencies (``"."``, ``"./x"``) and their ``src/`` folders."""
    if not isinstance(dependencies, list):
        problems.append(f"{path}: field 'dependencies': expected a list (got "
                        f"{json.dumps(dependencies)[:60]})")  # fmt: skip
        return []
    roots: list[Path] = []
    for entry in dependencies:
        if not isinstance(entry, str) or not entry.startswith("."):
            continue  # an installed package: pip's business, not ours
        folder = (path.parent / entry).resolve()
        if not folder.is_dir():
            problems.append(f"{path}: field 'dependencies': {entry!r}: no such directory "
                            f"({folder})")  # fmt: skip
            continue
        roots += [f for f in (folder / "src", folder) if f.is_dir() and f not in roots]
    return roots


def _graph(path: Path, name: str, spec: Any,
           problems: list[str]) -> tuple[str, Path | None] | None:  # fmt: skip
    """A graph's import path and the folder it imports from (None: already importable)."""
    if isinstance(spec, dict):
        spec = spec.get("path")
    where = f"{path}: field 'graphs.{name}'"
    if not isinstance(spec, str) or ":" not in spec:
        problems.append(f"{where}: {json.dumps(spec)[:60]} is not ./path/to/file.py:attribute "
                        "or package.module:attribute")  # fmt: skip
        return None
    location, _, attribute = spec.rpartition(":")
    if Path(location).suffix in JS:  # a JavaScript graph of the same deployment
        return None
    if not location.endswith(".py") and "/" not in location:
        return spec, None  # package.module:attribute
    file = (path.parent / location).resolve()
    if file.suffix != ".py" or not file.is_file():
        problems.append(f"{where}: {spec!r}: no such Python file ({file})")
        return None
    module, root = module_of(file)
    return f"{module}:{attribute}", root


def module_of(file: Path) -> tuple[str, Path]:
    """The module a Python file is imported as, and the folder it is imported from: the
    first parent that is not a package (``src/memory_agent/graph.py``: ``memory_agent.graph``
    from ``src``)."""
    root, parts = file.parent, [file.stem]
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    return ".".join(parts), root


def _index(path: Path, store: Any, problems: list[str]) -> StoreIndex | None:
    where = f"{path}: field 'store"
    if not isinstance(store, dict):
        problems.append(f"{where}': expected an object (got {json.dumps(store)[:60]})")
        return None
    index = store.get("index")
    if index is None:
        return None
    dims, embed, fields = (index.get(k) if isinstance(index, dict) else None
                           for k in ("dims", "embed", "fields"))  # fmt: skip
    if not isinstance(dims, int) or dims < 1 or not isinstance(embed, str) or ":" not in embed:
        problems.append(f"{where}.index': needs dims (a number) and embed "
                        f'("openai:text-embedding-3-small" or "./file.py:function"); got '
                        f"{json.dumps(index)[:80]}")  # fmt: skip
        return None
    if fields is not None and not (isinstance(fields, list) and
                                   all(isinstance(f, str) for f in fields)):  # fmt: skip
        problems.append(f"{where}.index.fields': expected a list of JSON paths (got "
                        f"{json.dumps(fields)[:60]})")  # fmt: skip
        return None
    return StoreIndex(dims, embed, tuple(fields) if fields is not None else None)


def _env(path: Path, env: Any, problems: list[str]) -> dict[str, str]:
    """``env``: a mapping, or a ``.env`` file relative to the json (a missing file is no
    problem: it is not committed, and CI replays without it)."""
    if env is None:
        return {}
    if isinstance(env, Mapping):
        return {str(k): str(v) for k, v in env.items()}
    if not isinstance(env, str):
        problems.append(f"{path}: field 'env': expected a file name or an object (got "
                        f"{json.dumps(env)[:60]})")  # fmt: skip
        return {}
    file = path.parent / env
    return dotenv(file) if file.is_file() else {}


def dotenv(file: Path) -> dict[str, str]:
    """``NAME=value`` lines (``export`` allowed, quotes stripped, ``#`` comments skipped)."""
    found = {}
    for line in file.read_text(encoding="utf-8").splitlines():
        match = _ENV_LINE.match(line)
        if not match or line.lstrip().startswith("#"):
            continue
        name, value = match.groups()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        found[name] = value
    return found
