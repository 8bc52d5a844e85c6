"""Not part of the langchain-ai/react-agent template: a shim so this style has the zoo's
uniform ``agent.py``. The template's graph lives in ``graph.py`` (its langgraph.json points
at ``./src/react_agent/graph.py:graph``); this re-exports it with the template's Context.
"""

from .context import Context
from .graph import graph

__all__ = ["Context", "graph"]
