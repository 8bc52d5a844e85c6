"""The tools a graph offers its models, read from the graph before it runs: the names a
case's ``expected_tools`` can name.

A tool a LangGraph agent can call is in a ``ToolNode`` (``create_react_agent``,
``create_agent``, ``create_supervisor``'s and ``create_swarm``'s agents, a ``StateGraph``
with ``ToolNode(tools)``, also behind ``with_fallbacks``), in the graph or one of its
subgraphs; handoff tools are among them (langgraph-supervisor's ``transfer_to_<agent>``,
a swarm's ``create_handoff_tool`` or a team's own). langgraph-supervisor writes one more
handoff itself, ``transfer_back_to_<supervisor>`` (langgraph_supervisor/handoff.py
``create_handoff_back_messages``; the name normalised as ``_normalize_agent_name`` does),
named after the agent whose tools hand off.

A graph with no ``ToolNode`` calls its tools from nodes of its own (LangGraph's quickstart
``tool_node`` function, the functional API's tasks): what it offers cannot be read, and
nothing is concluded (None). One that has ToolNodes and calls more tools from its own
nodes would be warned about those wrongly: the run warns, it never refuses.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.runnables import RunnableWithFallbacks
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel

from eval_pipeline.evaluators.handoffs import HANDOFF_PREFIXES, is_handoff

SPACES = re.compile(r"\s+")
HAND_BACK = HANDOFF_PREFIXES[1]
# langgraph_supervisor/handoff.py and langgraph_swarm/handoff.py: on each handoff tool
HANDOFF_DESTINATION = "__handoff_destination"


def offered_tools(graph: Pregel) -> frozenset[str] | None:
    """Every tool name the graph's ToolNodes offer (handoffs included) and the handoff-back
    to each agent offering handoffs (a supervisor); None when the graph has no ToolNode."""
    try:
        graphs = [("", graph), *graph.get_subgraphs(recurse=True)]
    except Exception:  # a graph LangGraph cannot walk: nothing is concluded, nothing fails
        return None
    names: set[str] = set()
    found = False
    for namespace, each in graphs:
        for node in getattr(each, "nodes", {}).values():  # (a remote graph has none)
            tool_node = _tool_node(node.bound)
            if tool_node is None:
                continue
            found = True
            names.update(tool_node.tools_by_name)
            if namespace and any(_hands_off(t) for t in tool_node.tools_by_name.values()):
                agent = namespace.split("|")[-1].split(":")[0]  # (LangGraph's NS_SEP, NS_END)
                names.add(HAND_BACK + SPACES.sub("_", agent.strip()).lower())
    return frozenset(names) if found else None


def _hands_off(tool: BaseTool) -> bool:
    """A handoff tool of langgraph-supervisor or langgraph-swarm (by its metadata, which
    both set, or its name)."""
    return HANDOFF_DESTINATION in (tool.metadata or {}) or is_handoff(tool.name)


def _tool_node(runnable: Any) -> ToolNode | None:
    if isinstance(runnable, RunnableWithFallbacks):
        runnable = runnable.runnable
    return runnable if isinstance(runnable, ToolNode) else None
