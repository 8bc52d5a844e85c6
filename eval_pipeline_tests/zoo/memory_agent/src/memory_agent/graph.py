"""The memory graph: answer with what the store remembers, save what the user says.

After langchain-ai/memory-agent (commit 09bf577, src/memory_agent/graph.py), habits kept:
``call_model(state, runtime: Runtime[Context])`` searches ``runtime.store`` (the store the
LangGraph server gives the graph: the module compiles none) for the user's memories with
the last messages as the query, formats them and the current time into
``runtime.context.system_prompt``, and calls the model built from ``runtime.context.model``
with ``upsert_memory`` bound; ``store_memory`` runs the model's calls concurrently and
answers each with a tool message; ``graph = builder.compile()``, named "MemoryAgent".
"""

import asyncio
from datetime import datetime
from typing import cast

from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from memory_agent import tools, utils
from memory_agent.context import Context
from memory_agent.state import State


async def call_model(state: State, runtime: Runtime[Context]) -> dict:
    """Answer the user, reminded of what the store holds about them."""
    store = cast(BaseStore, runtime.store)
    found = await store.asearch(
        ("memories", runtime.context.user_id),
        query=str([m.content for m in state.messages[-3:]]),
        limit=10,
    )
    remembered = "\n".join(f"[{m.key}]: {m.value} (similarity: {m.score})" for m in found)
    if remembered:
        remembered = f"\n<memories>\n{remembered}\n</memories>"
    system = runtime.context.system_prompt.format(
        user_info=remembered, time=datetime.now().isoformat()
    )
    model = utils.load_chat_model(runtime.context.model).bind_tools([tools.upsert_memory])
    reply = await model.ainvoke([{"role": "system", "content": system}, *state.messages])
    return {"messages": [reply]}


async def store_memory(state: State, runtime: Runtime[Context]) -> dict:
    """Run the model's upsert_memory calls; answer each with what was stored."""
    calls = getattr(state.messages[-1], "tool_calls", [])
    saved = await asyncio.gather(*(
        tools.upsert_memory(**call["args"], user_id=runtime.context.user_id,
                            store=cast(BaseStore, runtime.store))
        for call in calls
    ))
    return {"messages": [{"role": "tool", "content": text, "tool_call_id": call["id"]}
                         for call, text in zip(calls, saved, strict=True)]}


def route_message(state: State) -> str:
    """To store_memory when the model called the tool, else the turn is over."""
    return "store_memory" if getattr(state.messages[-1], "tool_calls", None) else END


builder = StateGraph(State, context_schema=Context)
builder.add_node(call_model)
builder.add_edge("__start__", "call_model")
builder.add_node(store_memory)
builder.add_conditional_edges("call_model", route_message, ["store_memory", END])
builder.add_edge("store_memory", "call_model")
graph = builder.compile()
graph.name = "MemoryAgent"

__all__ = ["graph"]
