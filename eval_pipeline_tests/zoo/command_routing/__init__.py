"""Imitates langchain-ai/docs: src/oss/langgraph/graph-api-send-command.mdx ("Combine
control flow and state updates with Command"): nodes route with ``Command``, no edges
but START. Graph: ``agent:graph``."""
