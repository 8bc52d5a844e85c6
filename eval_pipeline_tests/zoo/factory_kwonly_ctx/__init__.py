"""Imitates langchain-ai/docs: src/oss/call-tools.mdx (``create_react_agent`` with a model
instance and ``@tool`` tools) in a keyword-only factory: ``agent:build`` (``build(*, ctx)``)."""
