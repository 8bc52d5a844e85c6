"""Evaluators for the research (trajectory) suite.

``answer_correct`` is the deterministic answer matcher: every key fact of the reference
answer (numbers, and capitalised words that are not sentence openers) must appear in the
candidate. ``stepwise_score`` and ``survived_until`` report the teacher-forced stepwise
evaluation the research agent runs against the reference trajectory (see
agents/research/stepwise.py): they read its per-step results from the output.
"""

from __future__ import annotations

import re

from eval_pipeline.evaluators.declare import Score, ScoreError, evaluator
from eval_pipeline.evaluators.registry import register

_FACT = re.compile(r"\d[\d,.]*\d|\d|[A-Z][A-Za-z&'-]+")
_OPENERS = {"The", "It", "I", "In", "A", "An", "Its", "Which"}


def key_facts(text: str) -> set[str]:
    return {f.rstrip(".,").lower() for f in _FACT.findall(text or "") if f not in _OPENERS}


def answer_matches(candidate: str, reference: str) -> tuple[bool, list[str]]:
    """(all reference facts present, the missing ones)."""
    have = key_facts(candidate)
    missing = sorted(f for f in key_facts(reference) if f not in have)
    return not missing, missing


@register
@evaluator(data_type="BOOLEAN", reads=("expected_output.answer",))
def answer_correct(*, output, expected_output=None, **kwargs) -> Score:
    """1.0 when the response states every key fact (number, name) of the reference answer."""
    reference = str((expected_output or {}).get("answer") or "")
    ok, missing = answer_matches(str((output or {}).get("response") or ""), reference)
    return Score(float(ok), "all reference facts present" if ok else f"missing facts {missing}")


def _failed_steps(output) -> list[dict]:
    """The steps that failed; no stepwise run, or a step that errored, makes the item
    unscorable (ScoreError), never a value."""
    if "steps" not in (output or {}):
        raise ScoreError("no stepwise run", "the output has no stepwise steps: the case has no "
                         "reference trajectory, or the agent no `stepwise:` option")  # fmt: skip
    steps = (output or {}).get("steps") or []
    errors = [s for s in steps if s.get("error")]
    if errors:
        first = errors[0]
        raise ScoreError(first.get("error_kind") or "error",
                         f"{len(errors)} of {len(steps)} stepwise steps failed with an error "
                         f"(step {first['step']}: {first['error']})")  # fmt: skip
    return [s for s in steps if s.get("score", 0) < 1]


@register
@evaluator(may_read=("expected_output.trajectory",))
def stepwise_score(*, output, **kwargs) -> Score:
    """Share of the reference trajectory's steps the agent's steps matched (stepwise runs)."""
    failed = _failed_steps(output)
    comment = "; ".join(f"step {s['step']}: {s['comment']}" for s in failed) or "every step"
    return Score((output or {}).get("stepwise_score"), comment)


@register
@evaluator(may_read=("expected_output.trajectory",))
def survived_until(*, output, **kwargs) -> Score:
    """How far through the reference trajectory the agent got before its first failed step."""
    failed = _failed_steps(output)
    comment = f"first failed step: {failed[0]['step']}" if failed else "survived every step"
    return Score((output or {}).get("survived_until"), comment)
