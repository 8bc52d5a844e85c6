"""The research suite (seed 004): multi-hop questions over a search tool, scored on the
final answer, on the whole trajectory, and step by step against reference trajectories
(the project file turns on the adapter's stepwise run: agents/adapters/stepwise.py)."""

from __future__ import annotations

from langgraph.graph.state import CompiledStateGraph

from eval_examples.research.corpus import load_corpus, search_tool
from eval_examples.tool_agent import build_tool_graph
from eval_pipeline import AgentContext, GoldenCase
from eval_pipeline.plugins import normalize_messages


def build(ctx: AgentContext) -> CompiledStateGraph:
    """Agent ⇄ search over the corpus beside the suite's cases."""
    tools = [search_tool(load_corpus(ctx.dataset_dir / "corpus.jsonl"))]
    return build_tool_graph(ctx.model.bind_tools(tools), tools, ctx.system_prompt())


def validate_case(case: GoldenCase) -> list[tuple[str, str]]:
    problems = []
    if not isinstance(case.input, dict) or not isinstance(case.input.get("question"), str):
        problems.append(("input.question", "required, a string"))
    expected = case.expected_output or {}
    if not isinstance(expected.get("answer"), str):
        problems.append(("expected_output.answer", "required, the reference answer"))
    try:
        messages = normalize_messages(expected.get("trajectory"))
    except (ValueError, KeyError, TypeError) as exc:
        return [*problems, ("expected_output.trajectory", f"not a message list: {exc}")]
    if not messages or messages[0]["role"] != "user" or messages[-1]["role"] != "assistant":
        problems.append(
            (
                "expected_output.trajectory",
                "OpenAI messages from the user question to the final answer",
            )
        )
    return problems
