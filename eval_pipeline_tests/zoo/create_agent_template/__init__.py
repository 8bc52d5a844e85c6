"""Imitates langchain-ai/simple-agent-template: src/simple_agent/graph.py (LangChain v1
``create_agent`` with a model string, built at import). Graph: ``agent:graph``."""
