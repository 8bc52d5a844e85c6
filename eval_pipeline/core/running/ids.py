"""Values an agent or a library makes up afresh on every run, made steady for comparing.

A model returns a new tool-call id on every call (``call_…``), the tool result quotes it,
langgraph-supervisor gives each handoff-back message a ``uuid4()`` id, LangChain a run id
per message, an agent names what it stores with ``uuid4()`` and writes that name into a
tool result and the next prompt. Two runs of the same agent therefore never have equal
requests or outputs, though nothing that matters differs. ``steady`` replaces each such
value by ``<id N>``, N its order of first appearance in the value, so a value stays the
same placeholder wherever it recurs (a call and the result that answers it, a memory's
name in a tool result and in the next system prompt): two values are alike exactly when
they differ only in which ids were drawn. Two kinds are replaced:

- an id under a key of ``ID_FIELDS`` inside a message or a tool call (a dict with a role
  or type and content or tool calls; a dict with a name and args or a function), whole,
  whatever its shape: an ``id`` elsewhere — an order's, a product's — is content;
- anywhere in any text, a value of a shape nothing but a generator makes (``Generated``):
  a uuid (any version, with or without hyphens, any case), a ULID, and a team's own
  patterns (``replay.generated_patterns`` in the project file).

Timestamps are another matter: two drawn in one run are equal or not by the second they
fell in, so their order says nothing; ``mask_times`` masks every date with a time of day
to the second as one ``<time>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

ID_FIELDS = frozenset({"id", "tool_call_id", "call_id", "run_id"})

# The shapes a generator makes, found anywhere in text, each a whole token (no letter or
# digit on either side). A uuid with hyphens, any version, any case; without hyphens (as
# ``uuid4().hex``) only with a uuid's version and variant digits, so that not every 32-digit
# hex string (a checksum) is taken for one; a ULID (26 of Crockford's base-32 digits, the
# first 0 until the year 10889) with at least one letter, so that no 26-digit number is.
_TOKEN = r"(?<![0-9A-Za-z])(?:{})(?![0-9A-Za-z])"
BUILT_IN = (
    r"(?i:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
    r"(?i:[0-9a-f]{12}[1-8][0-9a-f]{3}[89ab][0-9a-f]{15})",
    r"(?i:0(?=[0-9]*[a-hjkmnp-tv-z])[0-9a-hjkmnp-tv-z]{25})",
)
# An ISO-8601 date and time of day to the second (not a bare date: that can be content).
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")


def mask_times(text: str) -> str:
    """``text`` with every date and time of day to the second as ``<time>``."""
    return TIMESTAMP.sub("<time>", text)


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot name generated values (None: it can)."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return f"not a regular expression: {exc}"
    if compiled.search("") is not None:
        return "it matches the empty text: it must match a generated value, not nothing"
    return None


@dataclass(frozen=True)
class Generated:
    """What counts as a generated value in text: the built-in shapes and ``patterns``, a
    team's own regular expressions (checked with ``pattern_problem`` where they are read)."""

    patterns: tuple[str, ...] = ()

    @cached_property
    def _compiled(self) -> tuple[re.Pattern[str], ...]:
        built_in = tuple(re.compile(_TOKEN.format(p)) for p in BUILT_IN)
        return built_in + tuple(re.compile(p) for p in self.patterns)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where ``text`` holds generated values, left to right, none overlapping (where
        two shapes overlap, the one that starts first, then the longer)."""
        found = sorted((m.start(), -m.end()) for p in self._compiled for m in p.finditer(text)
                       if m.end() > m.start())  # fmt: skip
        spans: list[tuple[int, int]] = []
        for start, end in found:
            if not spans or start >= spans[-1][1]:
                spans.append((start, -end))
        return spans


_BUILT_IN_ONLY = Generated()


@dataclass
class Steadied:
    """A value made steady, and the generated values found in its text by placeholder
    (for translating an answer recorded for one draw to another: ``translation``)."""

    value: Any
    drawn: dict[str, str] = field(default_factory=dict)  # placeholder -> the value


def steadied(value: Any, generated: Generated | None = None) -> Steadied:
    """``value`` with its made-up ids replaced by their order of first appearance."""
    generated = generated or _BUILT_IN_ONLY
    seen: dict[str, str] = {}
    out = Steadied(None)

    def placeholder(drawn: str) -> str:
        return seen.setdefault(drawn, f"<id {len(seen) + 1}>")

    def text(item: str) -> str:
        parts, last = [], 0
        for start, end in generated.spans(item):
            name = placeholder(item[start:end])
            out.drawn[name] = item[start:end]
            parts += [item[last:start], name]
            last = end
        return "".join(parts) + item[last:] if parts else item

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            ids = _carries_ids(item)
            return {k: (placeholder(v) if ids and k in ID_FIELDS and isinstance(v, str) and v
                        else walk(v))
                    for k, v in item.items()}  # fmt: skip
        if isinstance(item, list):
            return [walk(v) for v in item]
        if isinstance(item, str):
            return text(item)
        return item

    out.value = walk(value)
    return out


def steady(value: Any, generated: Generated | None = None) -> Any:
    """``value`` with its made-up ids replaced by their order of first appearance."""
    return steadied(value, generated).value


def translation(recorded: Steadied, now: Steadied) -> dict[str, str]:
    """For two values alike but for their draws: each generated value of ``recorded`` that
    ``now`` drew otherwise, and what it drew instead."""
    return {value: now.drawn[name] for name, value in recorded.drawn.items()
            if name in now.drawn and now.drawn[name] != value}  # fmt: skip


def translate(text: str, values: dict[str, str]) -> str:
    """``text`` with each key of ``values`` replaced by its value, all at once."""
    if not values:
        return text
    keys: Sequence[str] = sorted(values, key=len, reverse=True)
    return re.sub("|".join(map(re.escape, keys)), lambda m: values[m.group(0)], text)


def _carries_ids(value: dict[str, Any]) -> bool:
    message = ("role" in value or "type" in value) and ("content" in value or "tool_calls" in value)
    call = ("args" in value or "function" in value) and ("name" in value or "function" in value)
    return message or call
