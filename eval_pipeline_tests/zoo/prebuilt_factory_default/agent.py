"""Weather agent from the LangGraph (v0.x) quickstart's prebuilt ``create_react_agent``.

Source imitated: langchain-ai/docs: src/oss/quickstart.mdx ("2. Create an agent" and
"3. Configure an LLM"; same page in langchain-ai/langgraph: docs/docs/agents/agents.md at
commit 23961cff61a42b52525f3b20b4094d8d2fba1744).

Habits kept: tools are vanilla Python functions with a docstring (no ``@tool``: "Tools can
be defined as vanilla Python functions"); ``create_react_agent(model=..., tools=[...],
prompt="...")`` with the system prompt as a plain string; the model is a configured chat
model instance (the page uses ``init_chat_model``; here ``ChatOpenAI(model="gpt-4o-mini")``).
The quickstart builds the agent at module level; here it is wrapped in the factory our
pipeline calls, ``build_graph(ctx=None)``: it builds its own ``ChatOpenAI`` either way and
takes the prompt from ``ctx.system_prompt()`` when a ctx is given, else ``SYSTEM_PROMPT``,
so ``build_graph()`` also works standalone.

``create_react_agent`` is deprecated in langgraph 1.x (it warns at call time, pointing at
``langchain.agents.create_agent``); the warning is left as a team following these docs
would see it.

Input: ``{"messages": [HumanMessage(...)]}``. Answer: last AI message of ``messages``.
"""

from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}


def get_weather(city: str) -> str:
    """Get weather for a given city."""
    return WEATHER.get(city.lower(), "unknown city")


def get_time(city: str) -> str:
    """Get the local time for a given city."""
    return TIMES.get(city.lower(), "unknown city")


def build_graph(ctx=None):
    model = ChatOpenAI(model="gpt-4o-mini")
    prompt = ctx.system_prompt() if ctx is not None else SYSTEM_PROMPT
    return create_react_agent(
        model=model,
        tools=[get_weather, get_time],
        prompt=prompt,
    )
