"""Imitates langchain-ai/docs: src/oss/langgraph/quickstart.mdx ("Use the Functional API").
The entrypoint is ``agent:agent``; it takes a plain list of messages and returns one."""
