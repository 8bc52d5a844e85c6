"""The adapters that turn a team's agent into something a run can call, one module per
kind of agent (``kinds.py`` says what a kind is). Importing the package registers the
built-in kinds: a LangGraph graph or factory, any callable, an HTTP service."""

from eval_pipeline.agents.adapters import callable, graph, http  # noqa: F401  (they register)
