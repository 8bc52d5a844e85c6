"""A ReAct-style LangGraph agent for the behavioural suites: agent ⇄ tools → END.

The runner-facing adapter returns the behavioural output contract: ``tools_called``,
``tool_calls`` ({name, args}), ``response`` and the full ``messages`` (OpenAI format) for
trajectory evaluators.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    convert_to_openai_messages,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from eval_pipeline.agents.inline_tools import on_event_loop
from eval_pipeline.agents.retry_policy import LLM_RETRY_POLICY
from eval_pipeline.agents.seeding import call_options, item_config
from eval_pipeline.core.agent import AgentResult, item_seed
from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.prompts import PromptVersion


def build_tool_graph(
    llm: Any,
    tools: Sequence[BaseTool],
    system_prompt: str,
    *,
    checkpointer: Any = None,
    interrupt_after: Sequence[str] | None = None,
) -> CompiledStateGraph:
    async def agent(state: MessagesState, config: RunnableConfig) -> dict:
        messages = [SystemMessage(content=system_prompt), *state["messages"]]
        reply = await llm.ainvoke(messages, **call_options(config))
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent, retry_policy=LLM_RETRY_POLICY)
    builder.add_node("tools", ToolNode(on_event_loop(tools)))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer, interrupt_after=interrupt_after)


class ToolAgent:
    """Runs one case (``input.message``) through the agent's compiled graph."""

    def __init__(
        self,
        llm: BaseChatModel,
        tools: Sequence[BaseTool],
        prompt: PromptVersion,
        *,
        model_name: str,
        base_seed: int = 0,
    ):
        self.llm = llm
        self.tools = list(tools)
        self.system_prompt = prompt.compile()
        self.model_name = model_name
        self.base_seed = base_seed
        self.graph = build_tool_graph(llm.bind_tools(self.tools), self.tools, self.system_prompt)

    async def run(self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()):
        message = case.input.get("message")
        if not isinstance(message, str):
            raise ValueError(f"case {case.id}: input.message must be a string")
        seed = item_seed(case.id, repeat, self.base_seed)
        state = await self.graph.ainvoke(
            {"messages": [HumanMessage(content=message)]},
            config=item_config(seed, callbacks, recursion_limit=16),
        )
        return behavioural_result(state["messages"], self.model_name)


def behavioural_result(messages: Sequence[Any], model_name: str) -> AgentResult:
    ai = [m for m in messages if isinstance(m, AIMessage)]
    calls = [{"name": c["name"], "args": c["args"]} for m in ai for c in m.tool_calls]
    usage = [m.usage_metadata or {} for m in ai]
    return AgentResult(
        output={
            "tools_called": [c["name"] for c in calls],
            "tool_calls": calls,
            "response": next((str(m.content) for m in reversed(ai) if m.content), ""),
            "messages": convert_to_openai_messages(list(messages)),
        },
        input_tokens=sum(u.get("input_tokens", 0) for u in usage),
        output_tokens=sum(u.get("output_tokens", 0) for u in usage),
        model=model_name,
    )


def validate_behavioural_case(tool_names: tuple[str, ...]):
    """Seed 001's case format: input.message, expected_tools, expected_fields, criteria."""

    def validate(case: GoldenCase) -> list[tuple[str, str]]:
        problems = []
        if not isinstance(case.input.get("message"), str):
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
