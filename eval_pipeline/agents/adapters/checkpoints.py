"""The in-memory checkpointer an item's thread runs on (a conversation, a stepwise step)."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel


def fresh_checkpointer(graph: Pregel) -> InMemorySaver:
    """An in-memory checkpointer for one item's thread that reads back exactly the types the
    graph's schemas name (subgraphs' included): the allowlist LangGraph derives from them
    when it compiles a graph with a checkpointer in its strict mode. The default one reads
    back any type with a warning ("Deserializing unregistered type …Order from checkpoint.
    This will be blocked in a future version"). A graph that is not a StateGraph (the
    functional API) gets the default."""
    try:
        from langgraph._internal._serde import build_serde_allowlist
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    except ImportError:  # a LangGraph that moved it: the default saver, with its warnings
        return InMemorySaver()
    builders = [g.builder for g in (graph, *(s for _, s in graph.get_subgraphs(recurse=True)))
                if isinstance(g, CompiledStateGraph)]  # fmt: skip
    if not builders:
        return InMemorySaver()
    schemas: list[Any] = []
    channels: dict[str, Any] = {}
    for builder in builders:
        schemas += [
            builder.state_schema,
            builder.input_schema,
            builder.output_schema,
            builder.context_schema,
            *(n.input_schema for n in builder.nodes.values()),
        ]
        channels |= {f"{id(builder)}:{k}": v for k, v in builder.channels.items()}  # fmt: skip
    allowed = build_serde_allowlist(schemas=[s for s in schemas if s is not None],
                                    channels=channels)  # fmt: skip
    return InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=allowed))
