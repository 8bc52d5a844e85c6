"""Teacher-forced, stepwise evaluation of a LangGraph agent on a reference trajectory (seed 004).

For each assistant step of the reference, the agent's own graph starts from the reference
prefix (the messages before that step, as its input state) and stops once the agent node
has produced its next message (``interrupt_after`` that node): one model call per step, no
replay of earlier steps. The message is scored against the reference step: tool calls must
be the same tools with matching arguments (``args_mode``), a final answer must contain the
reference answer's key facts. Optionally (seed 004) an LLM judges step similarity instead:
for answers (``answer_judge``) or for tool steps too (``step_judge``). ``survived_until`` is
the index of the first failed step divided by the number of steps (1.0 if none failed).

A step that fails with an error (its model call, or its judge's) is recorded on that step
with the error and its kind; the item keeps its full run's output, and ``stepwise_score``
and ``survived_until`` are errors of the run (counted by kind), never a 0 taken for a wrong
answer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel
from pydantic import BaseModel, ConfigDict, Field

from eval_pipeline.agents.adapters.checkpoints import fresh_checkpointer
from eval_pipeline.core.running.failures import error_kind
from eval_pipeline.core.util.redact import redact
from eval_pipeline.evaluators.llm_judge import llm_judge
from eval_pipeline.evaluators.research import answer_matches
from eval_pipeline.evaluators.trajectory import ArgsMode, normalize_messages, strict_calls_match
from eval_pipeline.llm.factory import pinned_chat_model
from eval_pipeline.llm.model_settings import LLMSettings

# (produced answer, reference answer) -> (acceptable, why): e.g. judge_answers(llm_judge(...))
AnswerJudge = Callable[[str, str], tuple[bool, str]]
# (produced tool calls, reference tool calls) -> (acceptable, why): e.g. judge_steps(...)
StepJudge = Callable[[list[dict[str, Any]], list[dict[str, Any]]], tuple[bool, str]]
STEP_RUBRIC = (
    "The agent's step does the same thing as the reference step (User input): the same "
    "tools for the same purpose, arguments that mean the same, or an answer that states "
    "the same facts. Wording and argument order do not matter."
)


@dataclass(frozen=True)
class StepwiseSpec:
    node: str  # the node that calls the model
    reference: str = "trajectory"  # where in expected_output the reference trajectory is
    args_mode: ArgsMode = "exact"
    answer_judge: AnswerJudge | None = None
    step_judge: StepJudge | None = None  # tool steps judged instead of matched


def judge_answers(judge: Callable[..., Any], *, pass_at: float = 0.7) -> AnswerJudge:
    """Use an ``llm_judge`` evaluator as the final-answer matcher of the stepwise run."""

    def decide(produced: str, reference: str) -> tuple[bool, str]:
        verdict = judge(input=reference, output={"response": produced})
        return verdict.value >= pass_at, f"judge {verdict.value:.2f}: {verdict.comment}"

    return decide


def judge_steps(judge: Callable[..., Any], *, pass_at: float = 0.7) -> StepJudge:
    """Use an ``llm_judge`` evaluator to decide whether tool steps are the same step."""

    def decide(produced: list[dict[str, Any]], reference: list[dict[str, Any]]) -> tuple[bool, str]:
        verdict = judge(input=json.dumps(reference, sort_keys=True),
                        output=json.dumps(produced, sort_keys=True))  # fmt: skip
        return verdict.value >= pass_at, f"judge {verdict.value:.2f}: {verdict.comment}"

    return decide


async def stepwise(
    graph: Pregel, spec: StepwiseSpec, reference: Sequence[dict[str, Any]],
    callbacks: Sequence[Any], context: Any = None,
) -> dict[str, Any]:  # fmt: skip
    normalized = normalize_messages(list(reference))
    steps = [k for k, m in enumerate(normalized) if m["role"] == "assistant"]
    forced = graph.copy({"checkpointer": fresh_checkpointer(graph),
                         "interrupt_after_nodes": [spec.node]})  # fmt: skip
    results = []
    for index, k in enumerate(steps):
        config: RunnableConfig = {
            "configurable": {"thread_id": f"step-{uuid.uuid4()}"},
            "callbacks": list(callbacks),
            "recursion_limit": 4,
        }
        try:
            state = await forced.ainvoke({"messages": convert_to_messages(list(reference[:k]))},
                                         config=config, context=context)  # fmt: skip
            results.append(_score(index, normalized[k], state["messages"][-1], spec))
        except Exception as exc:  # recorded on the step: the full run's answer stands
            results.append(_failed(index, normalized[k], exc))
    scores = [r["score"] for r in results]
    first_failed = next((i for i, s in enumerate(scores) if s < 1), None)
    return {
        "steps": results,
        "stepwise_score": sum(scores) / len(scores) if scores else 1.0,
        "survived_until": 1.0 if first_failed is None else first_failed / len(scores),
    }


def _failed(index: int, expected: dict[str, Any], exc: Exception) -> dict[str, Any]:
    message = redact(f"{type(exc).__name__}: {exc}")[:500]
    return {
        "step": index,
        "kind": "tool_calls" if expected["tool_calls"] else "answer",
        "expected": expected["tool_calls"] or expected["content"],
        "produced": None,
        "score": 0.0,
        "comment": f"error: {message}",
        "error": message,
        "error_kind": error_kind(exc),
    }


def _score(index: int, expected: dict[str, Any], produced: Any, spec: StepwiseSpec) -> dict:
    got_calls = (
        [{"name": c["name"], "args": c["args"]} for c in produced.tool_calls]
        if isinstance(produced, AIMessage) and produced.tool_calls
        else None
    )
    want_calls = expected["tool_calls"]
    if want_calls:
        if got_calls and spec.step_judge is not None:
            ok, why = spec.step_judge(got_calls, want_calls)
        else:
            ok, why = strict_calls_match(got_calls or [], want_calls, spec.args_mode)
        if not got_calls:
            ok, why = False, "answered instead of calling tools"
        elif len(got_calls) != len(want_calls):
            ok, why = False, f"{len(got_calls)} tool calls, reference {len(want_calls)}"
    elif got_calls:
        ok, why = False, f"called {[c['name'] for c in got_calls]} instead of answering"
    elif spec.answer_judge is not None:
        ok, why = spec.answer_judge(str(produced.content), expected["content"])
    else:
        ok, missing = answer_matches(str(produced.content), expected["content"])
        why = "" if ok else f"answer misses {missing}"
    return {
        "step": index,
        "kind": "tool_calls" if want_calls else "answer",
        "expected": want_calls or expected["content"],
        "produced": got_calls or str(getattr(produced, "content", "")),
        "score": 1.0 if ok else 0.0,
        "comment": why or "matches the reference",
    }


class StepwiseConfig(BaseModel):
    """Teacher-forced evaluation on a reference trajectory (agents/adapters/stepwise.py)."""

    model_config = ConfigDict(extra="forbid")

    node: str = Field(min_length=1)  # the graph node that calls the model
    reference: str = "trajectory"  # the key of expected_output holding the reference
    args_mode: ArgsMode = "exact"
    judge: StepJudgeConfig | None = None  # an LLM judges step similarity (default: matching)


class StepJudgeConfig(BaseModel):
    """``stepwise: {judge: …}``: an LLM judges step similarity instead of matching."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None  # default: the configured endpoint's model (pinned, temp 0)
    steps: Literal["answers", "all"] = "answers"  # all: tool steps too
    pass_at: float = Field(0.7, ge=0.0, le=1.0)  # a judge score at or above it passes


def stepwise_spec(config: StepwiseConfig, llm: LLMSettings) -> StepwiseSpec:
    """Teacher-forced steps matched deterministically, or judged by a pinned LLM judge."""
    spec = StepwiseSpec(config.node, config.reference, config.args_mode)
    if config.judge is None:
        return spec
    judge = llm_judge(STEP_RUBRIC, pinned_chat_model(llm, config.judge.model),
                      name="step_similarity")  # fmt: skip
    at = config.judge.pass_at
    return replace(spec, answer_judge=judge_answers(judge, pass_at=at),
                   step_judge=judge_steps(judge, pass_at=at) if config.judge.steps == "all"
                   else None)  # fmt: skip
