"""This module provides the weather and time tools of the agent.

Part of the zoo's copy of the langchain-ai/react-agent template (commit d89d249c2a76,
src/react_agent/tools.py). Adapted: the template's Tavily ``search`` tool is replaced by
``get_weather`` and ``get_time``, written the way the template writes its tool: a plain
``async def`` with a docstring (no ``@tool``), collected in ``TOOLS`` for ``ToolNode``.
"""

# ruff: noqa: UP006, UP035 (the template's own ruff config ignores these)

from typing import Any, Callable, List

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}


async def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return WEATHER.get(city.lower(), "unknown city")


async def get_time(city: str) -> str:
    """Get the local time in a city."""
    return TIMES.get(city.lower(), "unknown city")


TOOLS: List[Callable[..., Any]] = [get_weather, get_time]
