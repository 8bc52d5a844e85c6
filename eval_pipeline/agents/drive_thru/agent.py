"""Adapter between the evaluation runner and the drive-thru graph (thin, no scoring)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage

from eval_pipeline.agents.drive_thru.graph import bind_llm, build_graph
from eval_pipeline.agents.drive_thru.menu import Menu, Order, load_menu
from eval_pipeline.agents.seeding import item_config
from eval_pipeline.core.agent import AgentResult, item_seed
from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.prompts import PromptVersion


class DriveThruAgent:
    """Runs each case through the agent's compiled graph; returns the output contract."""

    def __init__(
        self,
        llm: BaseChatModel,
        prompt: PromptVersion,
        *,
        model_name: str,
        menu: Menu | None = None,
        base_seed: int = 0,
        callbacks: list[Any] | None = None,
    ):
        self.llm = llm
        self.menu = menu or load_menu()
        self.system_prompt = prompt.compile(menu=self.menu.describe())
        self.model_name = model_name
        self.base_seed = base_seed
        self.callbacks = callbacks or []
        self.graph = build_graph(bind_llm(llm), self.system_prompt)

    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        utterance = case.input.get("customer_utterance")
        if not isinstance(utterance, str):
            raise ValueError(f"case {case.id}: input.customer_utterance must be a string")
        seed = item_seed(case.id, repeat, self.base_seed)
        config = item_config(seed, [*self.callbacks, *callbacks], recursion_limit=25)
        state = await self.graph.ainvoke(
            {
                "messages": [HumanMessage(content=utterance)],
                "menu": self.menu,
                "current_order": Order(),
                "reasoning": [],
            },
            config=config,
        )
        return to_result(state, self.model_name)


def to_result(state: dict[str, Any], model_name: str) -> AgentResult:
    """Reshape final graph state into the output contract and sum token usage."""
    order_items = [
        {
            "item_id": line.item_id,
            "name": line.name,
            "quantity": line.quantity,
            "size": line.size.value if line.size else "regular",
            "modifiers": [{"modifier_id": m.modifier_id, "name": m.name} for m in line.modifiers],
        }
        for line in state["current_order"].items
    ]
    ai_messages = [m for m in state["messages"] if isinstance(m, AIMessage)]
    tool_calls = [call["name"] for m in ai_messages for call in m.tool_calls]
    response = next((str(m.content) for m in reversed(ai_messages) if m.content), "")
    usage = [m.usage_metadata or {} for m in ai_messages]
    return AgentResult(
        output={
            "order_items": order_items,
            "tool_calls": tool_calls,
            "response": response,
            "item_count": sum(i["quantity"] for i in order_items),
        },
        input_tokens=sum(u.get("input_tokens", 0) for u in usage),
        output_tokens=sum(u.get("output_tokens", 0) for u in usage),
        model=model_name,
    )
