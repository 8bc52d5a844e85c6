"""A LangGraph graph as the agent under test, with a generic output contract.

Each item runs on a thread of its own (and a fresh in-memory checkpointer when the graph
was compiled with one, so items never share state). The case input becomes the graph's
input state; the output contract is read from the run:

- ``messages``: the final state's messages in OpenAI format;
- ``tool_calls``: ``[{name, args, id}]`` of every tool call the model made, in call order,
  parallel calls and calls inside subgraphs included;
- ``tools_called``: their names; ``response``: the last AI text;
- every field listed in ``state_fields``, taken from the final state and made JSON-able.

A conversation case (core/conversation.py) runs turn by turn on one thread: each customer
turn is one human message into the same state (the graph's checkpointer, or a fresh
in-memory one), the conversation ends when ``done_field`` of the state turns true.

Tokens are not read here: every model call is counted by llm/usage.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_openai_messages
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel import Pregel

from eval_pipeline.agents.adapters.jsonable import jsonable
from eval_pipeline.agents.adapters.stepwise import StepwiseSpec, stepwise
from eval_pipeline.agents.context import AgentContext, ContextAgent
from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.conversation import AgentTurn, Customer, conversation_spec, converse
from eval_pipeline.core.running.agent import AgentResult

RESERVED = ("messages", "tool_calls", "tools_called", "response")


class GraphInputError(ValueError):
    """The case input cannot become this graph's input state (a suite's configuration)."""

    fault = "configuration"


@dataclass(frozen=True)
class GraphOptions:
    input_map: Mapping[str, str] | None = None  # state key → dotted path into the case input
    state_fields: tuple[str, ...] = ()
    recursion_limit: int = 25
    stepwise: StepwiseSpec | None = None
    done_field: str | None = None  # dotted path in the state: true once the agent has finished
    customer: Customer | None = None  # plays conversation cases after their scripted turns


class GraphAgent(ContextAgent):
    def __init__(self, graph: Pregel, options: GraphOptions, ctx: AgentContext):
        super().__init__(ctx)
        self.graph, self.options = graph, options

    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        graph = self.graph
        spec = conversation_spec(case)
        if graph.checkpointer not in (None, False) or spec is not None:
            graph = graph.copy({"checkpointer": InMemorySaver()})
        config = {
            "configurable": {"thread_id": f"{case.id}:{repeat}:{uuid.uuid4().hex}"},
            "callbacks": list(callbacks),
            "recursion_limit": self.options.recursion_limit,
        }
        if spec is not None:
            session = GraphSession(graph, config, self.options)
            return AgentResult(await converse(session, spec, self.options.customer))
        state = graph_input(case.input, self.options.input_map)
        final, made = await run_graph(graph, state, config)
        output = output_contract(final, made, self.options.state_fields)
        reference = (case.expected_output or {}).get(self.options.stepwise.reference) if (
            self.options.stepwise and isinstance(case.expected_output, dict)
        ) else None  # fmt: skip
        if reference:
            output |= await stepwise(self.graph, self.options.stepwise, reference, callbacks)
        return AgentResult(output)


class GraphSession:
    """One thread of a graph: each customer turn continues the same state."""

    def __init__(self, graph: Pregel, config: dict[str, Any], options: GraphOptions):
        self.graph, self.config, self.options = graph, config, options
        self.final: dict[str, Any] = {}
        self.made: list[AIMessage] = []

    async def send(self, text: str) -> AgentTurn:
        final, made = await run_graph(self.graph, {"messages": [HumanMessage(content=text)]},
                                      self.config)  # fmt: skip
        self.final = final or self.final
        self.made += made
        state = {name: jsonable(self.final.get(name)) for name in self.options.state_fields}
        finalized = False
        if done := self.options.done_field:
            head, _, rest = done.partition(".")
            finalized = bool(lookup(jsonable(self.final.get(head)), rest or "."))
        return AgentTurn(
            customer=text,
            reply=next((t for m in reversed(made) if (t := _text(m))), ""),
            tool_calls=[{"name": c["name"], "args": c["args"], "id": c.get("id")}
                        for m in made for c in m.tool_calls],
            state=state,
            finalized=finalized,
        )  # fmt: skip

    def output(self) -> dict[str, Any]:
        return output_contract(self.final, self.made, self.options.state_fields)


def graph_input(case_input: Any, input_map: Mapping[str, str] | None) -> dict[str, Any]:
    """The graph's input state: one human message from ``input.message`` (or the input
    itself when it is a string), or the state keys ``input_map`` builds."""
    if input_map is None:
        message = case_input if isinstance(case_input, str) else None
        if isinstance(case_input, dict):
            message = case_input.get("message")
        if not isinstance(message, str):
            keys = sorted(case_input) if isinstance(case_input, dict) else type(case_input)
            raise GraphInputError(
                f"the case input has no 'message' string (it has {keys}): give the cases an "
                "input.message, or map the input to the graph's state with agent.input_map"
            )
        return {"messages": [HumanMessage(content=message)]}
    state: dict[str, Any] = {}
    for key, path in input_map.items():
        value = lookup(case_input, path)
        if value is None:
            raise GraphInputError(f"input_map: {key} ← {path!r}, but the case input has no {path}")
        state[key] = [HumanMessage(content=value)] if key == "messages" and isinstance(
            value, str
        ) else value  # fmt: skip
    return state


def lookup(value: Any, path: str) -> Any:
    """A dotted path into the case input ('.' is the whole input)."""
    if path in (".", ""):
        return value
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


async def run_graph(
    graph: Pregel, state: dict[str, Any], config: dict[str, Any]
) -> tuple[dict[str, Any], list[AIMessage]]:
    """The final state and every AI message any node wrote, subgraphs included, in order."""
    final: dict[str, Any] = {}
    made: list[AIMessage] = []
    seen: set[Any] = set()
    async for namespace, mode, chunk in graph.astream(
        state, config, stream_mode=["values", "updates"], subgraphs=True
    ):
        if mode == "values":
            if not namespace and isinstance(chunk, dict):
                final = chunk
            continue
        for update in (chunk or {}).values() if isinstance(chunk, dict) else ():
            for message in _messages_of(update):
                key = message.id or id(message)
                if isinstance(message, AIMessage) and key not in seen:
                    seen.add(key)
                    made.append(message)
    return final, made


def _messages_of(update: Any) -> list[BaseMessage]:
    if not isinstance(update, dict):
        return []
    value = update.get("messages")
    items = value if isinstance(value, list) else [value]
    return [m for m in items if isinstance(m, BaseMessage)]


def output_contract(
    final: Mapping[str, Any], made: Sequence[AIMessage], state_fields: Sequence[str]
) -> dict[str, Any]:
    messages = [m for m in final.get("messages") or [] if isinstance(m, BaseMessage)]
    calls = [{"name": c["name"], "args": c["args"], "id": c.get("id")}
             for m in made for c in m.tool_calls]  # fmt: skip
    ai = [m for m in messages if isinstance(m, AIMessage)] or list(made)
    output: dict[str, Any] = {
        "messages": convert_to_openai_messages(messages) if messages else [],
        "tool_calls": calls,
        "tools_called": [c["name"] for c in calls],
        "response": next((t for m in reversed(ai) if (t := _text(m))), ""),
    }
    for name in state_fields:
        output[name] = jsonable(final.get(name))
    return output


def _text(message: AIMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content or []]
    return "".join(parts)
