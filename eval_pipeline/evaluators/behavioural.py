"""Behavioural scoring (seed 001): groundedness, correctness, completeness, overall.

Output contract of behavioural agents: ``tools_called`` (names), ``tool_calls``
({name, args}) and ``response`` (text). The case's ``expected_output`` holds
``expected_tools`` and ``expected_fields``; its ``metadata.criteria`` the flags
``grounded`` and ``tool_called`` (both true by default; chit-chat cases set
``grounded: false`` to opt out). A case passes at overall ≥ 0.7.

A name in ``expected_tools`` is matched against the tools the agent called and the
handoffs it made (``tool_calls`` of kind "handoff": a supervisor's ``transfer_to_billing``,
as teams list them): ``calls_made``. ``tools_called`` leaves handoffs out, so grounding
still needs a tool that consulted data; a handoff is not one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from eval_pipeline.evaluators.declare import Evaluator, Score, evaluator
from eval_pipeline.evaluators.handoffs import handoffs_made
from eval_pipeline.evaluators.registry import register

WEIGHTS = {"groundedness": 0.4, "correctness": 0.4, "completeness": 0.2}
PASS_AT = 0.7
# Seed 001's default aliases; a suite adds or replaces entries (completeness_with).
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "price": ("price", "$", "USD", "cost"),
    "rating": ("rating", "stars", "score"),
    "status": ("status", "state"),
    "tracking_number": ("tracking", "shipment"),
}


def _tools(output) -> list[str]:
    return list((output or {}).get("tools_called") or [])


def calls_made(output) -> list[str]:
    """What ``expected_tools`` is matched against: the tools the agent called, then the
    handoffs it made, each name once."""
    return list(dict.fromkeys([*_tools(output), *handoffs_made(output)]))


def missing_calls(output, expected: Sequence[str]) -> list[str]:
    """The names of ``expected`` the agent neither called as a tool nor handed off with."""
    made = set(calls_made(output))
    return [name for name in expected if name not in made]


def groundedness_value(tools_called: Sequence[str], criteria: Mapping) -> float:
    if not criteria.get("grounded", True):
        return 1.0  # the case opts out (chit-chat)
    if criteria.get("tool_called", True) and not tools_called:
        return 0.0  # a factual question answered without consulting any data
    return 1.0


def correctness_value(tools_called: Sequence[str], expected: Sequence[str]) -> float:
    """Share of the expected tools that were called; extra calls are not penalised."""
    if not expected:
        return 1.0
    return sum(1 for t in expected if t in tools_called) / len(expected)


@lru_cache(maxsize=1024)
def _pattern(alias: str) -> re.Pattern[str]:
    # Only an ASCII letter next to the alias blocks it: "$348" matches "$", "profit margin"
    # never matches "price" (\b would treat "$" oddly and letters-only is what we mean).
    return re.compile(rf"(?<![A-Za-z]){re.escape(alias)}(?![A-Za-z])", re.IGNORECASE)


def completeness_value(
    text: str, expected_fields: Sequence[str], aliases: Mapping[str, Sequence[str]]
) -> tuple[float, list[str], list[str]]:
    """(share of fields found, found, missing)."""
    if not expected_fields:
        return 1.0, [], []
    found: list[str] = []
    missing: list[str] = []
    for name in expected_fields:
        patterns = [_pattern(a) for a in aliases.get(name, (name,))]
        (found if any(p.search(text or "") for p in patterns) else missing).append(name)
    return len(found) / len(expected_fields), found, missing


@register
@evaluator(may_read=("metadata.criteria",))
def groundedness(*, output, metadata=None, **kwargs) -> Score:
    """0.0 for a factual answer given without calling any tool (a case may opt out)."""
    criteria = (metadata or {}).get("criteria") or {}
    tools = _tools(output)
    if not criteria.get("grounded", True):
        comment = "grounding not required (case opts out)"
    else:
        handed = handoffs_made(output)
        only = f" (handoffs are not data: {handed})" if handed else ""
        comment = f"consulted {tools}" if tools else f"answered without calling any tool{only}"
    return Score(groundedness_value(tools, criteria), comment)


@register
@evaluator(reads=("expected_output.expected_tools",))
def correctness(*, output, expected_output=None, **kwargs) -> Score:
    """Share of the expected tools the agent called (a handoff named there, such as
    ``transfer_to_billing``, counts when the agent made it); extra calls are not penalised."""
    expected = list((expected_output or {}).get("expected_tools") or [])
    made = calls_made(output)
    missing = missing_calls(output, expected)
    comment = f"missing {missing}" if missing else f"called every expected tool ({expected})"
    if missing and (handed := handoffs_made(output)):
        comment += f"; handoffs made: {handed}"
    return Score(correctness_value(made, expected), comment)


def _aliases(extra: Mapping[str, Sequence[str]] | None) -> dict[str, tuple[str, ...]]:
    return {**FIELD_ALIASES, **{k: tuple(v) for k, v in (extra or {}).items()}}


@register(name="completeness")
def completeness_with(aliases: Mapping[str, Sequence[str]] | None = None) -> Evaluator:
    """Share of the expected fields the answer mentions, by name or alias (the product
    discovery example's aliases, with ``aliases`` added on top)."""
    merged = _aliases(aliases)

    @evaluator(name="completeness", params={"aliases": merged},
               reads=("expected_output.expected_fields",))  # fmt: skip
    def completeness(*, output, expected_output=None, **kwargs) -> Score:
        fields = list((expected_output or {}).get("expected_fields") or [])
        text = str((output or {}).get("response") or "")
        value, _, missing = completeness_value(text, fields, merged)
        return Score(
            value, f"missing fields {missing}" if missing else "every expected field present"
        )

    return completeness


@register(name="overall")
def overall_with(aliases: Mapping[str, Sequence[str]] | None = None) -> Evaluator:
    """``overall`` = 0.4·groundedness + 0.4·correctness + 0.2·completeness; pass at 0.7."""
    completeness_fn = completeness_with(aliases)

    @evaluator(name="overall", params={"aliases": _aliases(aliases)},
               reads=("expected_output.expected_tools", "expected_output.expected_fields"),
               may_read=("metadata.criteria",))  # fmt: skip
    def behavioural_overall(*, output, expected_output=None, metadata=None, **kwargs) -> Score:
        parts = {
            "groundedness": groundedness(output=output, metadata=metadata).value,
            "correctness": correctness(output=output, expected_output=expected_output).value,
            "completeness": completeness_fn(output=output, expected_output=expected_output).value,
        }
        value = sum(WEIGHTS[k] * v for k, v in parts.items())
        verdict = "pass" if value >= PASS_AT else "fail"
        detail = ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
        return Score(round(value, 6), f"{verdict}: {detail}",
                     {**parts, "passed": value >= PASS_AT})  # fmt: skip

    return behavioural_overall


completeness = completeness_with()
behavioural_overall = overall_with()
