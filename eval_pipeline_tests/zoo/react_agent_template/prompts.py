"""Default prompts used by the agent.

Part of the zoo's copy of the langchain-ai/react-agent template (commit d89d249c2a76,
src/react_agent/prompts.py). Adapted: the template's opening ("You are a helpful AI
assistant.") is replaced by the weather assistant's, on one line; its second line stays:
graph.py fills ``{system_time}`` with the time of each call, as the template does, so every
request carries a different timestamp.
"""

SYSTEM_PROMPT = (
    "You are a weather assistant. Use the tools for every weather or time question."
    "\n\nSystem time: {system_time}"
)
