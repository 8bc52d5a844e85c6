"""Teacher-forced, stepwise evaluation of a LangGraph tool agent on a reference trajectory.

For each assistant step of the reference, the agent's graph starts from the reference
prefix (the messages before that step, as LangGraph state) and runs only until the agent
node has produced its next message (``interrupt_after=["agent"]``): one model call per
step, no replay of earlier steps. The produced message is scored against the reference
step: tool calls must be the same tools with matching arguments (``args_mode``), a final
answer must contain the reference answer's key facts (or satisfy an LLM judge, when one
is given). ``survived_until`` is the index of
the first failed step divided by the number of steps (1.0 if none failed).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, convert_to_messages
from langgraph.checkpoint.memory import MemorySaver

from eval_pipeline.agents.tool_agent import build_tool_graph
from eval_pipeline.evaluators.research import answer_matches
from eval_pipeline.evaluators.trajectory import normalize_messages, strict_calls_match

# (produced answer, reference answer) -> (acceptable, why): e.g. judge_answers(llm_judge(...))
AnswerJudge = Callable[[str, str], tuple[bool, str]]


def judge_answers(judge: Callable[..., Any], *, pass_at: float = 0.7) -> AnswerJudge:
    """Use an ``llm_judge`` evaluator as the final-answer matcher of the stepwise run."""

    def decide(produced: str, reference: str) -> tuple[bool, str]:
        verdict = judge(input=reference, output={"response": produced})
        return verdict.value >= pass_at, f"judge {verdict.value:.2f}: {verdict.comment}"

    return decide


async def stepwise(
    llm: Any,
    tools: Sequence[Any],
    system_prompt: str,
    reference: Sequence[dict[str, Any]],
    *,
    args_mode: str = "exact",
    callbacks: Sequence[Any] = (),
    answer_judge: AnswerJudge | None = None,
) -> dict[str, Any]:
    normalized = normalize_messages(list(reference))
    steps = [k for k, m in enumerate(normalized) if m["role"] == "assistant"]
    graph = build_tool_graph(
        llm, tools, system_prompt, checkpointer=MemorySaver(), interrupt_after=["agent"]
    )
    results, tokens = [], {"input_tokens": 0, "output_tokens": 0}
    for index, k in enumerate(steps):
        prefix = convert_to_messages(list(reference[:k]))
        config = {
            "configurable": {"thread_id": f"step-{uuid.uuid4()}"},
            "callbacks": list(callbacks),
            "recursion_limit": 4,
        }
        state = await graph.ainvoke({"messages": prefix}, config=config)
        produced = state["messages"][-1]
        usage = getattr(produced, "usage_metadata", None) or {}
        for key in tokens:
            tokens[key] += int(usage.get(key, 0))
        results.append(_score(index, normalized[k], produced, args_mode, answer_judge))
    scores = [r["score"] for r in results]
    first_failed = next((i for i, s in enumerate(scores) if s < 1), None)
    return {
        "steps": results,
        "stepwise_score": sum(scores) / len(scores) if scores else 1.0,
        "survived_until": 1.0 if first_failed is None else first_failed / len(scores),
        "stepwise_tokens": tokens,  # the stepwise calls are billed too
    }


def _score(
    index: int,
    expected: dict[str, Any],
    produced: Any,
    args_mode: str,
    answer_judge: AnswerJudge | None,
) -> dict:
    got_calls = (
        [{"name": c["name"], "args": c["args"]} for c in produced.tool_calls]
        if isinstance(produced, AIMessage) and produced.tool_calls
        else None
    )
    want_calls = expected["tool_calls"]
    if want_calls:
        ok, why = strict_calls_match(got_calls or [], want_calls, args_mode)
        if not got_calls:
            ok, why = False, "answered instead of calling tools"
        elif len(got_calls) != len(want_calls):
            ok, why = False, f"{len(got_calls)} tool calls, reference {len(want_calls)}"
    elif got_calls:
        ok, why = False, f"called {[c['name'] for c in got_calls]} instead of answering"
    elif answer_judge is not None:
        ok, why = answer_judge(str(produced.content), expected["content"])
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
