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
from pathlib import Path
from typing import Any

from eval_pipeline.agents.adapters.answers import TurnSession, output_of
from eval_pipeline.agents.adapters.kinds import AgentKind, Build, KindConfig, Loading, register
from eval_pipeline.agents.context import AgentContext, ContextAgent
from eval_pipeline.agents.langfuse_prompt import serving
from eval_pipeline.agents.targets import ImportPath, import_target, source_of
from eval_pipeline.core.running.agent import Agent, AgentResult
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.suites.conversation import Customer, conversation_spec, converse


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


class CallableConfig(KindConfig):
    """``agent: {callable: …}``: ``fn(input, ctx) -> dict``, sync or async."""

    callable: ImportPath


@register
class CallableKind(AgentKind):
    key = "callable"
    Config = CallableConfig

    def describe(self, config: CallableConfig, loading: Loading) -> tuple[str, tuple[Path, ...]]:
        target = loading.target("agent", config.callable)
        if target is not None and not callable(target):
            loading.problem("agent", f"{config.callable} is a {type(target).__name__}: "
                            "expected fn(input, ctx)")  # fmt: skip
        return f"callable {config.callable}", source_of(config.callable) if target else ()

    def build(self, config: CallableConfig, build: Build) -> Agent:
        return CallableAgent(import_target(config.callable), build.ctx, target=config.callable,
                             customer=build.customer, done_field=config.done_field)  # fmt: skip
