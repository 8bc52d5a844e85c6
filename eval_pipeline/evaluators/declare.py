"""How an evaluator is declared: once, with its name; it returns a value, we build the
Langfuse ``Evaluation``.

An item evaluator is called as ``fn(*, input, output, expected_output, metadata, **kw)``
(Langfuse's convention, so it also works inside ``langfuse.run_experiment``). Declared with
``@evaluator``, its body returns a ``Score`` (or a bare number or bool) and the decorator
names the ``Evaluation``; a function that returns ``Evaluation`` objects itself (a user's
Langfuse evaluator) is used as it is.

Every evaluator carries a version that changes when its behaviour can: the hash of the
source file it is defined in and of its parameters, unless given explicitly. Runs record
these versions, and the gate never compares scores of different versions silently.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langfuse import Evaluation

Evaluator = Callable[..., Evaluation | list[Evaluation]]
RunEvaluator = Callable[..., Evaluation | list[Evaluation]]
# Langfuse's score data types we produce: NUMERIC (0–1) or BOOLEAN (0 or 1, a pass/fail).
DataType = Literal["NUMERIC", "BOOLEAN", "CATEGORICAL"]


@dataclass(frozen=True)
class CaseFields:
    """What an evaluator reads from a case: fields it needs, and fields it may use."""

    reads: tuple[str, ...] = ()
    may_read: tuple[str, ...] = ()


def case_fields(fn: Callable[..., Any]) -> CaseFields | None:
    """What ``fn`` declared it reads; None for an evaluator that does not say (a team's
    own function): then nothing about unknown fields can be concluded."""
    return getattr(fn, "case_fields", None)


class ScoreError(Exception):
    """The item cannot be scored: what the evaluator reads failed to be made (a stepwise
    step that errored, a judge call that failed). Recorded as an error of ``kind`` in the
    run's counts, never as a value."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Score:
    """What a declared evaluator's body returns for one item."""

    value: float | None
    comment: str | None = None
    metadata: dict[str, Any] | None = None


def evaluator(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    version: str | None = None,
    params: Mapping[str, Any] | None = None,
    uses_model: bool = False,
    reads: tuple[str, ...] = (),
    may_read: tuple[str, ...] = (),
    data_type: DataType = "NUMERIC",
) -> Any:
    """Declare an item evaluator named ``name`` (default: the function's name).

    ``params`` are what a factory configured it with (they are part of its version).
    ``uses_model``: it calls a model (a judge), so it runs through the runner: bounded
    concurrency, timeouts, retries, its tokens and cost counted apart from the agent's.
    ``reads``: the case fields it cannot score without (``"expected_output.expected_tools"``;
    ``"a|b"`` for either), ``may_read`` the ones it uses when present: a case lacking one
    it reads is refused when the dataset loads, never scored as if nothing were expected
    (core/suites/cases.py ``field_problems``). ``data_type``: BOOLEAN for a pass/fail (every value
    0 or 1: another one is an error of the evaluator, not a score), else NUMERIC."""

    def declare(body: Callable[..., Any]) -> Evaluator:
        label = name or body.__name__

        @functools.wraps(body)
        def call(*, input=None, output=None, expected_output=None, metadata=None, **kwargs):
            result = body(input=input, output=output, expected_output=expected_output,
                          metadata=metadata, **kwargs)  # fmt: skip
            return as_evaluation(label, result, data_type)

        call.uses_model = uses_model  # type: ignore[attr-defined]
        call.data_type = data_type  # type: ignore[attr-defined]
        call.case_fields = CaseFields(tuple(reads), tuple(may_read))  # type: ignore[attr-defined]
        return named(call, label, version or fingerprint(body, params))

    return declare(fn) if fn is not None else declare


def run_evaluator(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, version: str | None = None
) -> Any:
    """Declare a run-level evaluator: ``fn(*, item_results, **kw)``."""

    def declare(body: Callable[..., Any]) -> RunEvaluator:
        label = name or body.__name__

        @functools.wraps(body)
        def call(*, item_results, **kwargs):
            return as_evaluation(label, body(item_results=item_results, **kwargs))

        call.run_level = True  # type: ignore[attr-defined]
        return named(call, label, version or fingerprint(body))

    return declare(fn) if fn is not None else declare


def named(fn: Callable[..., Any], name: str, version: str) -> Any:
    fn.evaluator_name = name  # type: ignore[attr-defined]
    fn.evaluator_version = version  # type: ignore[attr-defined]
    return fn


def as_evaluation(
    name: str, result: Any, data_type: DataType = "NUMERIC"
) -> Evaluation | list[Evaluation]:
    if isinstance(result, Evaluation | list):
        return result
    if isinstance(result, Score):
        value, comment, metadata = result.value, result.comment, result.metadata
    elif result is None or isinstance(result, bool | int | float):
        value, comment, metadata = (None if result is None else float(result)), None, None
    else:
        raise TypeError(
            f"evaluator {name!r} returned {type(result).__name__}; return a Score, a number, "
            "a bool or langfuse Evaluation(s)"
        )
    if data_type == "BOOLEAN" and value not in (None, 0.0, 1.0):
        raise TypeError(f"evaluator {name!r} is declared BOOLEAN and returned {value!r}; "
                        "return 0 or 1, or declare it NUMERIC")  # fmt: skip
    # value None: no score (the run counts the item's score as an error, never as a 0)
    return Evaluation(name=name, value=value, comment=comment, metadata=metadata,  # type: ignore[arg-type]
                      data_type=data_type)  # fmt: skip


def data_type_of(fn: Callable[..., Any]) -> DataType:
    """What ``fn`` declared (NUMERIC for a function that does not say)."""
    return getattr(fn, "data_type", "NUMERIC")


def evaluator_name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "evaluator_name", None) or getattr(fn, "__name__", type(fn).__name__))


def evaluator_version(fn: Callable[..., Any]) -> str:
    """The declared version, else the hash of the function's source file."""
    return getattr(fn, "evaluator_version", None) or fingerprint(fn)


def fingerprint(fn: Callable[..., Any], params: Mapping[str, Any] | None = None) -> str:
    """Hash of the source file ``fn`` is defined in (its helpers usually live there too)
    and of ``params``: an edit anywhere in that file, or other parameters, change it."""
    digest = hashlib.sha256()
    target = inspect.unwrap(fn)
    try:
        digest.update(Path(inspect.getfile(target)).read_bytes())
    except (TypeError, OSError):  # built in or defined interactively: its name only
        digest.update(repr(target).encode())
    if params:
        digest.update(json.dumps(params, sort_keys=True, default=_stable).encode())
    return digest.hexdigest()[:12]


def _stable(value: Any) -> str:
    """A parameter JSON cannot hold (a function, an object) by its name, not its address."""
    return getattr(value, "__qualname__", None) or type(value).__qualname__
