"""What a caller asks of one evaluation run, declared once.

``RunOptions`` is the CLI's flags (cli/run_flags.py builds them from these fields: default,
bounds and help), the keyword arguments of ``eval_pipeline.evaluate()``, and the run
config of Dagster's ``agent_run_outputs`` (defs/evaluation/outputs.py derives its config
class from it). A default changed here changes everywhere.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eval_pipeline.core.errors import ConfigurationError

Tier = Literal["smoke", "full"]
Cache = Literal["reuse", "refresh", "off"]
OnUndecided = Literal["fail", "warn"]
GateMode = Literal["fixed", "sequential"]
SequentialUntil = Literal["verdict", "decided"]


class RunOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    tier: Tier = Field("full", description="Which cases: smoke (the quick subset) or full.")
    repeats: int | None = Field(
        None, ge=1, le=100, description="Runs per case (default: the suite's)."
    )
    concurrency: int = Field(
        8, ge=1, le=4096, description="Items in flight, in all (split over the shards)."
    )
    timeout_s: float = Field(
        120.0,
        ge=1.0,
        description="Seconds one attempt of one item may take, all its model calls included.",
    )
    requests_per_second: float | None = Field(
        None, gt=0, description="Item starts per second, in all (split over the shards)."
    )
    cache: Cache = Field(
        "reuse",
        description="reuse: take memoized item outputs (unchanged "
        "agent, prompt, model, case, repeat), run only the rest; refresh: run "
        "all and overwrite the memo; off: ignore the memo.",
    )
    baseline_label: str | None = Field(
        None,
        description="Gate against the latest full run of the version this label points to, "
        "and fail before any model call when there is none (default: the suite's "
        "regression.baseline_label, where none yet means no gate).",
    )
    baseline_run_id: str | None = Field(
        None, description="Gate against this run instead (e.g. the base commit's, in CI)."
    )
    margin: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Allowed drop before the gate fails (default: the suite's regression.margin; "
        "one its cases can decide: docs/gate.md, Choosing a margin).",
    )
    min_primary: float | None = Field(
        None, ge=0.0, le=1.0, description="Minimum mean of the primary metric."
    )
    gate: GateMode = Field(
        "sequential",
        description="sequential: the tier's cases first, then more of the suite's, in "
        "batches, until an anytime-valid confidence sequence decides (or the suite or the "
        "budget runs out); fixed: the tier's cases only, one paired test per metric (the "
        "verdicts of older releases).",
    )
    sequential_until: SequentialUntil = Field(
        "verdict",
        description="How far a sequential gate goes on: verdict: until the run's verdict is "
        "known (a failed threshold fails the run, so it stops there); decided: until the "
        "gate itself decides whether the agent got worse, whatever the thresholds say "
        "(eval-pipeline bisect: each step is the gate's decision).",
    )
    max_repeats: int | None = Field(
        None,
        ge=1,
        le=100,
        description="Sequential gate: once the suite's cases left look too few to decide, "
        "run each further case (drawn after the tier) that the baseline found flaky (its "
        "repeats disagree) this many times, so its mean is less noisy (default: as many "
        "times as the baseline ran it; the run's --repeat: never). Above the run's "
        "repeats it needs the mean reducer.",
    )
    on_undecided: OnUndecided = Field(
        "fail",
        description="When the gate cannot tell whether the agent got worse (verdict "
        "UNDECIDED): fail exits 3, so CI does not ship an untested change; warn exits 0 "
        "and keeps the UNDECIDED line.",
    )
    max_calls: int | None = Field(
        None,
        ge=1,
        description="Stop starting new items once the run's model calls (the "
        "agent's and its LLM judges') reach this many.",
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="Stop starting new items once the run's tokens (input and "
        "output, judges included) reach this many.",
    )
    max_cost: float | None = Field(
        None,
        gt=0,
        description="Stop starting new items once the run's cost in dollars "
        "(from the price table, judges included) reaches this.",
    )
    shards: int | None = Field(
        1,
        ge=0,
        le=64,
        description="Processes (Dagster: steps) the "
        "items are split over, sharing the concurrency; None or 0: by "
        "size.",
    )


class OptionsError(ConfigurationError):
    """Options that cannot be used; the message names the option and the value."""


def run_options(**given: Any) -> RunOptions:
    """``RunOptions`` from keyword arguments, a mistake named in the caller's words."""
    try:
        return RunOptions(**given)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = ".".join(str(p) for p in err["loc"]) or "options"
            message = "unknown option" if err["type"] == "extra_forbidden" else err["msg"]
            problems.append(f"{name}={err.get('input')!r}: {message}")
        raise OptionsError("; ".join(problems)) from None


DEFAULTS = RunOptions()
