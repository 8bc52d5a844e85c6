"""Weather agent: prebuilt ``create_react_agent`` built by a keyword-only factory on ctx.

Sources imitated: langchain-ai/docs: src/oss/call-tools.mdx ("Use in an agent":
``create_react_agent(model=model, tools=[...])`` with ``@tool`` tools and a model instance
made elsewhere) and src/oss/quickstart.mdx (``prompt=`` as the system prompt), written for
our pipeline's factory hook (eval_pipeline/agents/context.py: ``ctx.model``,
``ctx.system_prompt()``).

Habits kept: ``@tool`` tools at module level; ``create_react_agent(model, tools,
prompt=...)``; nothing built at import. The factory is ``def build(*, ctx)``: ``ctx`` is
keyword-only (a habit of teams that want call sites to name it), so a caller that passes
ctx positionally gets ``TypeError``. The model is the pipeline's (``ctx.model``), the prompt
is ``ctx.system_prompt()``; there is no fallback, so it cannot run without a ctx.

Input: ``{"messages": [HumanMessage(...)]}``. Answer: last AI message of ``messages``.
"""

from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return WEATHER.get(city.lower(), "unknown city")


@tool
def get_time(city: str) -> str:
    """Get the local time in a city."""
    return TIMES.get(city.lower(), "unknown city")


def build(*, ctx):
    return create_react_agent(
        model=ctx.model,
        tools=[get_weather, get_time],
        prompt=ctx.system_prompt(),
    )
