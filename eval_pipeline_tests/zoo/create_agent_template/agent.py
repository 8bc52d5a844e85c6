"""Minimal LangChain agent graph for deployment (weather/time edition).

Source imitated: langchain-ai/simple-agent-template: src/simple_agent/graph.py (commit
c805fb72c74e; the template's langgraph.json points at ``simple_agent.graph:graph``), the
LangChain v1 way the current templates and docs build an agent.

Habits kept: ``DEFAULT_MODEL = os.getenv("SIMPLE_AGENT_MODEL", "<provider>:<model>")``
(here "openai:gpt-4o-mini"; the template's is "anthropic:claude-sonnet-4-6"), so the model
is a STRING resolved by ``create_agent`` itself (``init_chat_model``) and an environment
variable can swap it; ``@tool`` tools; ``graph = create_agent(model=DEFAULT_MODEL,
tools=[...], system_prompt=..., name="simple_agent")`` built at import. The template passes
the prompt as an inline literal; here it is the module constant ``SYSTEM_PROMPT``. The file
is ``agent.py`` here (``graph.py`` in the template).

Input: ``{"messages": [{"role": "user", "content": ...}]}`` or ``HumanMessage``s (the
template's test uses the dict form). Answer: last AI message of ``messages``.
"""

from __future__ import annotations

import os

from langchain.agents import create_agent
from langchain_core.tools import tool

DEFAULT_MODEL = os.getenv("SIMPLE_AGENT_MODEL", "openai:gpt-4o-mini")

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}


@tool
def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    return WEATHER.get(city.lower(), "unknown city")


@tool
def get_time(city: str) -> str:
    """Return the local time in a city."""
    return TIMES.get(city.lower(), "unknown city")


graph = create_agent(
    model=DEFAULT_MODEL,
    tools=[get_weather, get_time],
    system_prompt=SYSTEM_PROMPT,
    name="simple_agent",
)
