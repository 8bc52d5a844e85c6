"""YAML that cannot hurt: every file eval-pipeline reads (project files, cases, thresholds,
prompts, labels, prices, labelled judge sets) is loaded with ``load`` (cases with
``compose_and_load``, for their lines):

- aliases that expand past ``MAX_NODES`` nodes are refused (a 554-byte file of nested
  aliases took 62 s and 1.4 GB once its cases were hashed);
- a key given twice in one mapping is refused (the last one silently won);
- values JSON cannot hold (dates and timestamps, ``!!binary``, ``!!set``, ``!!omap``,
  ``!!pairs``) are refused where they are read, not at run time with no file named.

Each refusal is a ``yaml.YAMLError`` with the line it is on (``problem_mark``), so every
caller's "file:line: malformed YAML: …" names the place.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NoReturn

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.resolver import Resolver

MAX_NODES = 100_000  # nodes a document may expand to, its aliases followed
MAX_DEPTH = 200  # how deep its values may nest


class _Strict:
    """The checks both loaders make, on top of PyYAML's safe composer and constructor."""

    def compose_document(self) -> Node | None:
        node: Node | None = super().compose_document()  # type: ignore[misc]
        if node is not None:
            _check_expansion(node)
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[attr-defined]
            if isinstance(key, list | dict):
                continue  # (refused by the SafeLoader itself: unhashable)
            if key in seen:
                raise ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"the key {key!r} is given twice (line {seen[key].line + 1} and line "
                    f"{key_node.start_mark.line + 1}): keep one", key_node.start_mark,
                )  # fmt: skip
            seen[key] = key_node.start_mark
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)  # type: ignore[misc]
        return mapping


class StrictLoader(_Strict, yaml.SafeLoader):
    """PyYAML's pure-Python safe loader, strictly: its errors are the ones users read."""


if yaml.__with_libyaml__:
    from yaml.cyaml import CParser  # type: ignore[attr-defined]  # (no stub names it)

    class FastStrictLoader(_Strict, Composer, CParser, SafeConstructor, Resolver):
        """The same loader on libyaml's scanner and parser (C: a case file loads about
        five times faster); composing stays PyYAML's Python, so a document nested too deep
        is a RecursionError here, never a crash in C."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            Composer.__init__(self)

    LOADERS: tuple[type, ...] = (FastStrictLoader, StrictLoader)
else:  # pragma: no cover (PyYAML built without libyaml)
    LOADERS = (StrictLoader,)


def _refuse(what: str) -> Callable[[yaml.SafeLoader, Node], NoReturn]:
    def construct(loader: yaml.SafeLoader, node: Node) -> NoReturn:
        raise ConstructorError(None, None, f"{what} ({node.tag}) is not a JSON value: quote "
                               "it to keep it as text", node.start_mark)  # fmt: skip

    return construct


NOT_JSON = {"timestamp": "a date or time", "binary": "binary data", "set": "a set",
            "omap": "an ordered map", "pairs": "a list of pairs"}  # fmt: skip
for _loader in LOADERS:
    for _tag, _what in NOT_JSON.items():
        _loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse(_what))  # type: ignore[attr-defined]


def _check_expansion(root: Node) -> None:
    """The number of nodes ``root`` expands to, each alias followed (memoized by node, so
    checking costs what the file holds, not what it expands to)."""
    sizes: dict[int, int] = {}

    def size(node: Node, depth: int = 0) -> int:
        if depth > MAX_DEPTH:
            raise ConstructorError(None, None, f"values nested deeper than {MAX_DEPTH} levels",
                                   node.start_mark)  # fmt: skip
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # (a recursive structure counts once)
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(size(child, depth + 1) for child in node.value)
        elif isinstance(node, MappingNode):
            total += sum(size(k, depth + 1) + size(v, depth + 1) for k, v in node.value)
        if total > MAX_NODES:
            raise ConstructorError(None, None, f"aliases expand past {MAX_NODES:,} values: "
                                   "write the values out, or split the file",
                                   node.start_mark)  # fmt: skip
        sizes[id(node)] = total
        return total

    size(root)


def load(text: str) -> Any:
    """One YAML document, strictly (module docstring)."""
    return _read(yaml.load, text)


def compose_and_load(text: str) -> tuple[Node | None, Any]:
    """One YAML document's node tree (its marks: lines) and its value, read once and
    checked as ``load`` checks (a cases file's reader wants both: parsing it twice was
    half of its cost)."""
    read: tuple[Node | None, Any] = _read(_node_and_value, text)
    return read


def _node_and_value(text: str, Loader: type) -> tuple[Node | None, Any]:
    """What ``yaml.compose`` and ``yaml.load`` return, from one pass (``load`` is
    ``get_single_node`` then ``construct_document``)."""
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def _read(read: Callable[..., Any], text: str) -> Any:
    """``read`` with the fast loader; a document it refuses is read again by the pure one,
    whose answer and error messages (with the line's text under them) are what they were
    before libyaml was used, whatever libyaml's own wording."""
    for loader in LOADERS[:-1]:
        try:
            return read(text, Loader=loader)
        except (yaml.YAMLError, RecursionError):
            pass
    try:
        return read(text, Loader=LOADERS[-1])
    except RecursionError:
        raise yaml.YAMLError(f"values nested deeper than {MAX_DEPTH} levels") from None


def json_loads(text: str | bytes) -> Any:
    """One JSON value (a line of a cases or recordings file, a recorded body). Nested past
    Python's recursion limit (about 1,000 levels), ``json`` raised RecursionError, a
    traceback and exit 1; that is a ValueError here, as malformed JSON is, so the reader
    names the line."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("values nested too deeply to read (over about 1,000 levels)") from None
