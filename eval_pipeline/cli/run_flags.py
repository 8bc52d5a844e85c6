"""Click options declared from ``RunOptions`` (core/options.py): each flag's default,
bounds or choices and help come from the model, declared there once."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args, get_origin

import click

from eval_pipeline.core.options import RunOptions

F = TypeVar("F", bound=Callable[..., Any])


# The flag of each RunOptions field, in the CLI's words (``run``, ``bisect``; the pytest
# plugin's are these with ``--eval-`` for ``--``).
FLAGS: dict[str, str] = {
    "tier": "--tier", "repeats": "--repeat", "concurrency": "--concurrency",
    "shards": "--workers", "timeout_s": "--timeout", "baseline_label": "--baseline",
    "baseline_run_id": "--baseline-run", "margin": "--margin", "min_primary": "--threshold",
    "cache": "--cache", "gate": "--gate", "sequential_until": "--sequential-until",
    "on_undecided": "--on-undecided", "max_repeats": "--max-repeats",
    "max_calls": "--max-calls", "max_tokens": "--max-tokens", "max_cost": "--max-cost",
}  # fmt: skip


def run_option(
    name: str, help: str | None = None, metavar: str | None = None, default: Any = None,
) -> Callable[[F], F]:  # fmt: skip
    """The ``run`` option (its flag in ``FLAGS``) for the RunOptions field ``name``: its
    default (unless ``default`` is given), its bounds or choices and its help come from
    the model."""
    field = RunOptions.model_fields[name]
    default = field.default if default is None else default
    return click.option(FLAGS[name], name, type=click_type(field), default=default,
                        show_default=default is not None, metavar=metavar,
                        help=help or field.description)  # fmt: skip


class FiniteFloat(click.FloatRange):
    """A float flag that must be a finite number in its range (nan passed every bound)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def click_type(field: Any) -> Any:
    """The click type of a RunOptions field, with the model's bounds: ``gt`` open, ``ge``
    closed (so click and the model agree on every bound: ``--max-cost 0`` is click's
    refusal, not a traceback from the model)."""
    if get_origin(field.annotation) is Literal:
        return click.Choice(list(get_args(field.annotation)))
    bounds = {type(m).__name__: m for m in field.metadata}
    low = next((getattr(bounds[k], k.lower()) for k in ("Ge", "Gt") if k in bounds), None)
    high = bounds["Le"].le if "Le" in bounds else None
    kind = next((t for t in (int, float) if t in (field.annotation, *get_args(field.annotation))),
                str)  # fmt: skip
    if kind is int:
        return click.IntRange(low, high, min_open="Gt" in bounds)
    if kind is float:
        return FiniteFloat(low, high, min_open="Gt" in bounds)
    return click.STRING


def flags_of(command: click.Command, options: RunOptions) -> list[str]:
    """``options`` as flags of ``command`` (those that differ from the defaults), named as
    the command declares them."""
    flags = {p.name: p.opts[0] for p in command.params if isinstance(p, click.Option)}
    defaults = RunOptions()
    return [
        part
        for name in RunOptions.model_fields
        if (value := getattr(options, name)) != getattr(defaults, name) and value is not None
        for part in (flags[name], str(value))
    ]
