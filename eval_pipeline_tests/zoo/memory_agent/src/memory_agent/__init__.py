"""Memory Agent: a graph that remembers what a user says about themselves.

The zoo's copy of langchain-ai/memory-agent (commit 09bf577, src/memory_agent/__init__.py).
"""

from memory_agent.graph import graph

__all__ = ["graph"]
