"""A sync LangGraph agent whose system prompt comes from Langfuse prompt management
(``weather/assistant``, label ``production``), with a hard-coded fallback.
Graph: ``agent:graph``."""
