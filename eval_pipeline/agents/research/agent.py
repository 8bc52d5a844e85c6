"""The research agent under evaluation: a free run, then the stepwise evaluation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage

from eval_pipeline.agents.research.stepwise import stepwise
from eval_pipeline.agents.seeding import item_config
from eval_pipeline.agents.tool_agent import behavioural_result, build_tool_graph
from eval_pipeline.core.agent import AgentResult, item_seed
from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.prompts import PromptVersion


class ResearchAgent:
    def __init__(
        self,
        llm: BaseChatModel,
        tools: Sequence[Any],
        prompt: PromptVersion,
        *,
        model_name: str,
        base_seed: int = 0,
        args_mode: str = "exact",
    ):
        self.llm = llm
        self.tools = list(tools)
        self.system_prompt = prompt.compile()
        self.model_name = model_name
        self.base_seed = base_seed
        self.args_mode = args_mode
        self.graph = build_tool_graph(llm.bind_tools(self.tools), self.tools, self.system_prompt)

    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        question = case.input.get("question")
        if not isinstance(question, str):
            raise ValueError(f"case {case.id}: input.question must be a string")
        seed = item_seed(case.id, repeat, self.base_seed)
        config = item_config(seed, callbacks, recursion_limit=16)
        state = await self.graph.ainvoke({"messages": [HumanMessage(content=question)]}, config)
        result = behavioural_result(state["messages"], self.model_name)
        reference = (case.expected_output or {}).get("trajectory")
        if reference:
            result.output |= await stepwise(
                self.llm.bind_tools(self.tools).bind(seed=seed),
                self.tools,
                self.system_prompt,
                reference,
                args_mode=self.args_mode,
                callbacks=callbacks,
            )
            result.input_tokens += result.output["stepwise_tokens"]["input_tokens"]
            result.output_tokens += result.output["stepwise_tokens"]["output_tokens"]
        return result
