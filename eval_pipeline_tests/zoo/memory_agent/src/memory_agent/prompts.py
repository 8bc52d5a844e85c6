"""The agent's default prompt.

After langchain-ai/memory-agent (commit 09bf577, src/memory_agent/prompts.py): a Python
format string with ``{user_info}`` (the memories found) and ``{time}``. Adapted: the first
line asks the model to save what the user says about themselves; the template's own first
line ("Get to know the user! Ask questions! Be spontaneous!") is the worse prompt the tests
gate.
"""

SYSTEM_PROMPT = """You are a helpful and friendly chatbot. Remember the user: save every \
fact they tell you about themselves with upsert_memory.
{user_info}

System Time: {time}"""
