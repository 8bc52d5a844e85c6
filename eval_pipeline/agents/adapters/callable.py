"""Any Python callable as the agent under test: ``fn(input, ctx) -> dict``, sync or async.

For agents that are not LangGraph graphs. ``ctx`` (agents/context.py) carries the prompt
version under test, a chat model for the configured endpoint, the item's seed and the
LangChain callbacks to attach. A sync function runs in a worker thread (the item's seed
and token counting follow it there), so it never blocks the other items in flight.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from eval_pipeline.agents.adapters.jsonable import jsonable
from eval_pipeline.agents.context import AgentContext, ContextAgent
from eval_pipeline.agents.langfuse_prompt import serving
from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.running.agent import AgentResult


class AgentOutputError(TypeError):
    """The agent answered with something that is not an output contract (a dict)."""

    fault = "configuration"


class CallableAgent(ContextAgent):
    def __init__(self, fn: Callable[..., Any], ctx: AgentContext, *, target: str):
        super().__init__(ctx)
        self.fn, self.target = fn, target

    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        ctx = self.ctx.for_item(case, repeat, tuple(callbacks))
        with serving(ctx):
            if inspect.iscoroutinefunction(self.fn):
                answer = await self.fn(case.input, ctx)
            else:
                answer = await asyncio.to_thread(self.fn, case.input, ctx)
                if inspect.isawaitable(answer):
                    answer = await answer
        return AgentResult(output_of(answer, self.target))


def output_of(answer: Any, target: str) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise AgentOutputError(
            f"{target} returned a {type(answer).__name__}; an agent returns a dict (the output "
            "its evaluators read, e.g. {'response': …, 'tools_called': […]})"
        )
    return jsonable(answer)
