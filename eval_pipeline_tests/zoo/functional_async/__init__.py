"""Imitates langchain-ai/langgraph: docs/docs/how-tos/react-agent-from-scratch-functional.ipynb
with async tasks. Entrypoint ``agent:agent``: list of messages in, final AIMessage out."""
