"""Any Python callable as the agent under test: ``fn(input, ctx) -> dict``, sync or async.

For agents that are not LangGraph graphs. ``ctx`` (agents/context.py) carries the prompt
version under test, a chat model for the configured endpoint, the item's seed and the
LangChain callbacks to attach. A sync function runs in a worker thread (the item's seed
and token counting follow it there), so it never blocks the other items in flight. A
conversation case calls it once per customer turn (agents/adapters/answers.py).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from eval_pipeline.agents.adapters.answers import TurnSession, output_of
from eval_pipeline.agents.context import AgentContext, ContextAgent
from eval_pipeline.agents.langfuse_prompt import serving
from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.conversation import Customer, conversation_spec, converse
from eval_pipeline.core.running.agent import AgentResult


class CallableAgent(ContextAgent):
    def __init__(self, fn: Callable[..., Any], ctx: AgentContext, *, target: str,
                 customer: Customer | None = None, done_field: str | None = None):  # fmt: skip
        super().__init__(ctx)
        self.fn, self.target = fn, target
        self.customer, self.done_field = customer, done_field

    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        ctx = self.ctx.for_item(case, repeat, tuple(callbacks))
        with serving(ctx):
            spec = conversation_spec(case)
            if spec is not None:
                session = TurnSession(lambda turn: self._call(turn, ctx), f"{case.id}:{repeat}",
                                      self.done_field, self.target)  # fmt: skip
                return AgentResult(await converse(session, spec, self.customer))
            return AgentResult(output_of(await self._call(case.input, ctx), self.target))

    async def _call(self, given: Any, ctx: AgentContext) -> Any:
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(given, ctx)
        answer = await asyncio.to_thread(self.fn, given, ctx)
        return await answer if inspect.isawaitable(answer) else answer
