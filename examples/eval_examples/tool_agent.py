"""A ReAct-style LangGraph agent for the behavioural and research suites: agent ⇄ tools.

The generic graph adapter (agents/adapters/graph.py) reads its output contract:
``tools_called``, ``tool_calls``, ``response`` and ``messages``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import SystemMessage
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from eval_examples.inline_tools import on_event_loop
from eval_pipeline import GoldenCase


def build_tool_graph(llm: Any, tools: Sequence[BaseTool], system_prompt: str) -> CompiledStateGraph:
    """``llm`` has the tools bound; the model node is named "agent" (stepwise stops there)."""

    async def agent(state: MessagesState) -> dict:
        messages = [SystemMessage(content=system_prompt), *state["messages"]]
        reply = await llm.ainvoke(messages)
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(on_event_loop(tools)))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "agent")
    return builder.compile()


def validate_behavioural_case(tool_names: tuple[str, ...]):
    """Seed 001's case format: input.message, expected_tools, expected_fields, criteria."""

    def validate(case: GoldenCase) -> list[tuple[str, str]]:
        problems = []
        if not isinstance(case.input, dict) or not isinstance(case.input.get("message"), str):
            problems.append(("input.message", "required, a string"))
        expected = case.expected_output or {}
        tools = expected.get("expected_tools", [])
        if not isinstance(tools, list) or any(t not in tool_names for t in tools):
            problems.append(
                (
                    "expected_output.expected_tools",
                    f"a list of tool names from {list(tool_names)}, got {tools!r}",
                )
            )
        fields = expected.get("expected_fields", [])
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            problems.append(("expected_output.expected_fields", "a list of field names"))
        criteria = getattr(case.metadata, "criteria", None) or {}
        if not isinstance(criteria, dict) or any(
            not isinstance(v, bool) for v in criteria.values()
        ):
            problems.append(("metadata.criteria", "a mapping of flags to true/false"))
        return problems

    return validate
