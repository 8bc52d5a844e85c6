"""The evaluators a project file may name, each registered where it is declared.

``@register`` above ``@evaluator`` (or ``@run_evaluator``) registers an evaluator without
parameters; above a factory (a function of the entry's parameters that returns an
evaluator: ``latency_within: {budget_ms: 8000}``) it registers the factory. The name is the
evaluator's; a factory may give one. Nothing else lists them: the project loader, the
docs' reference (docs/evaluators.md, ``python -m eval_pipeline.evaluators``) and
``evaluators.__all__`` (checked by a test) all read ``ITEM`` and ``RUN``.

The built-in ones are those declared in ``eval_pipeline``; a project's own are declared the
same way in a module its project file lists under ``plugins`` (the examples' evaluators
are: examples/eval_examples/drive_thru/evaluators.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from eval_pipeline.evaluators.declare import (
    CaseFields,
    DataType,
    case_fields,
    data_type_of,
    evaluator_name,
)

Kind = Literal["item", "run"]


@dataclass(frozen=True)
class Registered:
    """A registered evaluator: what a project file names, and how it is made."""

    name: str
    kind: Kind  # item: one score per case and repeat; run: one per run
    function: Callable[..., Any]  # the evaluator itself, or its factory
    about: str  # the first line of its docstring
    params: tuple[str, ...]  # what a project entry may give (a factory's parameters)
    fields: CaseFields | None  # the case fields it reads (None: its factory decides)
    data_type: DataType | None  # NUMERIC or BOOLEAN (None: its factory decides)

    @property
    def factory(self) -> Callable[..., Any]:
        """Called with the entry's parameters (none for a plain evaluator): the evaluator."""
        if self.params:
            return self.function
        return lambda: self.function


ITEM: dict[str, Registered] = {}
RUN: dict[str, Registered] = {}


def factories(kind: Kind) -> dict[str, Callable[..., Any]]:
    """Name → factory of the built-in evaluators of ``kind``, as registered now."""
    return {name: b.factory for name, b in (RUN if kind == "run" else ITEM).items()}


def register(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, kind: Kind | None = None
) -> Any:
    """Register ``fn``, a declared evaluator or a factory of one (see the module)."""

    def add(target: Callable[..., Any]) -> Callable[..., Any]:
        declared = hasattr(target, "evaluator_name")
        label = name or evaluator_name(target)
        found = kind or ("run" if getattr(target, "run_level", False) else "item")
        table = RUN if found == "run" else ITEM
        known = table.get(label)
        if known is not None and _origin(known.function) != _origin(target):
            raise ValueError(
                f"two {found} evaluators are named {label!r}: {_origin(known.function)} and "
                f"{_origin(target)}; rename one (@register(name=...))"
            )
        params = () if declared else tuple(inspect.signature(target).parameters)
        about = (inspect.getdoc(target) or "").split("\n\n")[0].replace("\n", " ")
        if not about:
            raise ValueError(
                f"evaluator {label!r} ({_origin(target)}) has no docstring: say what it "
                "scores in a docstring, e.g. '1.0 when the answer states the refund policy.' "
                "(its first paragraph is the evaluator's line in the reference table)"
            )
        table[label] = Registered(label, found, target, about, params,
                                  case_fields(target) if declared else None,
                                  data_type_of(target) if declared else None)  # fmt: skip
        return target

    return add(fn) if fn is not None else add


def _origin(function: Callable[..., Any]) -> str:
    """Where a registered function is declared (a module imported again re-registers)."""
    return f"{function.__module__}.{function.__qualname__}"


def is_builtin(entry: Registered) -> bool:
    """Declared in this package (not by a project's plugin)."""
    return entry.function.__module__.split(".")[0] == "eval_pipeline"


def _made_with_defaults(entry: Registered) -> Any:
    """A factory's evaluator made with its defaults (None: it needs parameters)."""
    parameters = inspect.signature(entry.function).parameters.values()
    required = [p for p in parameters if p.default is p.empty]
    return None if required else entry.function()


def reference() -> str:
    """The Markdown reference of the built-in evaluators (docs/evaluators.md's table)."""
    lines = ["| evaluator | kind | type | parameters | reads | may read | what it scores |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    entries = [e for e in (*ITEM.values(), *RUN.values()) if is_builtin(e)]
    for entry in sorted(entries, key=lambda b: (b.kind, b.name)):
        made = None if entry.fields is not None else _made_with_defaults(entry)
        fields = entry.fields or (made and case_fields(made)) or CaseFields()
        data_type = entry.data_type or (made and data_type_of(made)) or "per entry"
        cells = [f"`{entry.name}`", entry.kind, data_type, ", ".join(entry.params) or "–",
                 ", ".join(fields.reads) or "–", ", ".join(fields.may_read) or "–",
                 entry.about]  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
