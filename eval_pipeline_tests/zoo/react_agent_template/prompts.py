"""Default prompts used by the agent.

Part of the zoo's copy of the langchain-ai/react-agent template (commit d89d249c2a76,
src/react_agent/prompts.py). Adapted: the template's prompt ("You are a helpful AI
assistant.\n\nSystem time: {system_time}") is replaced by the weather assistant's, on one
line. graph.py still calls ``SYSTEM_PROMPT.format(system_time=...)`` on it, as the template
does: harmless here, but a prompt with a literal ``{`` or ``}`` would make it raise.
"""

SYSTEM_PROMPT = "You are a weather assistant. Use the tools for every weather or time question."
