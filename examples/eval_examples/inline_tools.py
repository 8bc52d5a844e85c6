"""Run the agents' in-memory tools on the event loop instead of in worker threads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool


def on_event_loop(tools: Iterable[BaseTool]) -> list[BaseTool]:
    """Give every sync-only tool a coroutine that calls it directly.

    LangChain awaits a tool that has only a sync function in the loop's default executor:
    a thread hop per call, through a pool of min(32, cores + 4) threads that every item in
    flight shares. Our tools read in-memory data and return at once, so they are called
    in place. The tools are changed in place and returned as a list.
    """
    tools = list(tools)
    for tool in tools:
        if isinstance(tool, StructuredTool) and tool.func and not tool.coroutine:
            tool.coroutine = _awaitable(tool.func)
    return tools


def _awaitable(func: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    async def call(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return call
