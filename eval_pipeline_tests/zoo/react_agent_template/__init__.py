"""React Agent.

This module defines a custom reasoning and action agent graph.
It invokes tools in a simple loop.

Part of the zoo's copy of the langchain-ai/react-agent template (commit d89d249c2a76,
src/react_agent/__init__.py), with a relative import. The graph is ``graph:graph`` (also
re-exported here and from ``agent``); run it with ``context=Context()``.
"""

from .graph import graph

__all__ = ["graph"]
