"""Helpers of the graph.

After langchain-ai/memory-agent (commit 09bf577, src/memory_agent/utils.py): the chat model
is made from "provider/model" by LangChain's ``init_chat_model``, which reads the
provider's own settings (OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_API_KEY …) from the
environment.
"""

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel


def load_chat_model(fully_specified_name: str) -> BaseChatModel:
    """``"openai/gpt-4o-mini"`` → ``init_chat_model("gpt-4o-mini", model_provider="openai")``."""
    provider, model = fully_specified_name.split("/", maxsplit=1)
    return init_chat_model(model, model_provider=provider)
