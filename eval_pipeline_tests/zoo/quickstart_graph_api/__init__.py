"""Imitates langchain-ai/docs: src/oss/langgraph/quickstart.mdx ("Use the Graph API"):
own ``MessagesState`` with ``operator.add`` and ``llm_calls``. The graph is ``agent:agent``."""
