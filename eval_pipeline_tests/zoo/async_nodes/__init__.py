"""Imitates langchain-ai/langgraph: docs/docs/how-tos/react-agent-from-scratch.ipynb, made
async as langchain-ai/docs: src/oss/use-graph-api.mdx ("Async") says. Graph: ``agent:graph``."""
