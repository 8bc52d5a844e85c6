"""LLM-as-judge: a rubric graded by a chat model with a structured verdict.

The judge model is passed in (any LangChain chat model supporting
``with_structured_output``), so it is pinned by whoever builds the suite; every score
records the judge's model name and the hash of the judge prompt (template + rubric), so a
changed rubric or judge never silently compares with old scores. The offline model
answers as a deterministic judge, which the tests use.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from typing import Any

from pydantic import BaseModel, Field

from eval_pipeline.evaluators.declare import Evaluator, Score, evaluator
from eval_pipeline.evaluators.registry import register

JUDGE_TEMPLATE = """You grade an AI agent's answer against a rubric.
Rubric: {rubric}

User input:
{input}

Agent answer:
{output}

Return a score from 0 (fails the rubric) to 1 (fully meets it) and one sentence of reasoning."""


class JudgeVerdict(BaseModel):
    """The judge's structured answer."""

    score: float = Field(ge=0.0, le=1.0)
    reasoning: str


def judge_prompt_hash(rubric: str) -> str:
    return hashlib.sha256((JUDGE_TEMPLATE + rubric).encode()).hexdigest()[:12]


def _text(value: Any) -> str:
    """What the judge reads: a conversation's turns (core/suites/conversation.py), the answer
    text of an output, or the value as JSON."""
    if isinstance(value, dict) and isinstance(value.get("transcript"), list):
        return "\n".join(f"Customer: {t.get('customer', '')}\nAssistant: {t.get('agent', '')}"
                         for t in value["transcript"])  # fmt: skip
    if isinstance(value, dict) and isinstance(value.get("response"), str):
        return value["response"]
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


@register
def llm_judge(rubric: str, model: Any, *, name: str = "llm_judge") -> Evaluator:
    """An item evaluator scoring the output against ``rubric`` with ``model`` as the judge.
    Its version covers the rubric, the judge prompt and the judge model."""
    # Tool calling is the structured-output method every tool-calling model supports.
    accepts_method = "method" in inspect.signature(model.with_structured_output).parameters
    options = {"method": "function_calling"} if accepts_method else {}
    structured = model.with_structured_output(JudgeVerdict, **options)
    model_name = str(getattr(model, "model_name", None) or getattr(model, "model", "unknown"))
    prompt_hash = judge_prompt_hash(rubric)
    identity = {"judge_model": model_name, "judge_prompt_hash": prompt_hash}

    @evaluator(name=name, params={"rubric": rubric, **identity}, uses_model=True)
    def judge(*, input=None, output, **kwargs) -> Score:
        message = JUDGE_TEMPLATE.format(rubric=rubric, input=_text(input), output=_text(output))
        verdict = structured.invoke(message)
        return Score(float(verdict.score), verdict.reasoning, identity)

    return judge
