"""A LangGraph graph as the agent under test, with a generic output contract.

Each item runs on a thread of its own (and a fresh in-memory checkpointer when the graph
was compiled with one, so items never share state). The case input becomes the graph's
input state; the output contract is read from the run:

- ``messages``: the final state's messages in OpenAI format;
- ``tool_calls``: ``[{name, args, id, kind, by, agent}]`` of every tool call, in call
  order, parallel calls and calls inside subgraphs included, each once: ``kind`` "tool",
  or "handoff" for a transfer to another agent (langgraph-supervisor's and
  langgraph-swarm's ``transfer_to_…`` tools); ``by`` "model", or "library" for the calls
  a library wrote itself (langgraph-supervisor's handoff-back); ``agent`` the name of the
  agent whose message made it (None for an unnamed one);
- ``tools_called``: the names of the tool calls, handoffs left out (what the built-in
  evaluators count); ``response``: the last AI text; ``answered_by``: the name of the
  agent that gave it;
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
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_openai_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from pydantic import Field

from eval_pipeline.agents.adapters.checkpoints import fresh_checkpointer
from eval_pipeline.agents.adapters.jsonable import jsonable
from eval_pipeline.agents.adapters.kinds import AgentKind, Build, KindConfig, Loading, register
from eval_pipeline.agents.adapters.stepwise import (
    StepwiseConfig,
    StepwiseSpec,
    stepwise,
    stepwise_spec,
)
from eval_pipeline.agents.context import AgentContext, ContextAgent
from eval_pipeline.agents.errors import AgentBuildError
from eval_pipeline.agents.langfuse_prompt import serving
from eval_pipeline.agents.targets import (
    ImportPath,
    call_factory,
    import_target,
    is_graph,
    source_of,
)
from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.conversation import AgentTurn, Customer, conversation_spec, converse
from eval_pipeline.core.running.agent import Agent, AgentResult
from eval_pipeline.evaluators.handoffs import HANDOFF_BACK, is_handoff

RESERVED = ("messages", "tool_calls", "tools_called", "response", "answered_by")


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
    context: Mapping[str, Any] | None = None  # the graph's runtime context (context_schema)


InputShape = Literal["state", "messages", "text"]


class GraphAgent(ContextAgent):
    def __init__(self, graph: Pregel, options: GraphOptions, ctx: AgentContext):
        super().__init__(ctx)
        self.graph, self.options = graph, options
        self.shape = input_shape(graph)
        self.context = runtime_context(graph, options.context)

    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        with serving(self.ctx):
            return await self._run(case, repeat, callbacks)

    async def _run(self, case: GoldenCase, repeat: int, callbacks: Sequence[Any]) -> AgentResult:
        graph = self.graph
        spec = conversation_spec(case)
        if graph.checkpointer not in (None, False) or spec is not None:
            graph = graph.copy({"checkpointer": fresh_checkpointer(graph)})
        config = {
            "configurable": {"thread_id": f"{case.id}:{repeat}:{uuid.uuid4().hex}"},
            "callbacks": list(callbacks),
            "recursion_limit": self.options.recursion_limit,
        }
        if spec is not None:
            session = GraphSession(graph, config, self.options, self.shape, self.context)
            return AgentResult(await converse(session, spec, self.options.customer))
        state = graph_input(case.input, self.options.input_map, self.shape)
        final, made = await run_graph(graph, state, config, self.context)
        output = output_contract(final, made, self.options.state_fields)
        reference = (case.expected_output or {}).get(self.options.stepwise.reference) if (
            self.options.stepwise and isinstance(case.expected_output, dict)
        ) else None  # fmt: skip
        if reference:
            output |= await stepwise(self.graph, self.options.stepwise, reference, callbacks,
                                     self.context)  # fmt: skip
        return AgentResult(output)


class GraphSession:
    """One thread of a graph: each customer turn continues the same state."""

    def __init__(self, graph: Pregel, config: dict[str, Any], options: GraphOptions,
                 shape: InputShape = "state", context: Any = None):  # fmt: skip
        self.graph, self.config, self.options = graph, config, options
        self.shape, self.context = shape, context
        self.final: dict[str, Any] = {}
        self.made: list[AIMessage] = []

    async def send(self, text: str) -> AgentTurn:
        final, made = await run_graph(self.graph, graph_input(text, None, self.shape),
                                      self.config, self.context)  # fmt: skip
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


def input_shape(graph: Pregel) -> InputShape:
    """What the graph takes: a state dict (a StateGraph; an entrypoint of a dict), or, for
    LangGraph's functional API, what the entrypoint's input is typed as: a list of messages
    (``@entrypoint() def agent(messages: list[BaseMessage])``, and an untyped one: the
    docs' agents take their messages) or a string."""
    if isinstance(graph, CompiledStateGraph):
        return "state"
    try:
        kind = graph.get_input_jsonschema().get("type")
    except Exception:  # a type pydantic cannot describe
        return "state"
    return {"object": "state", "string": "text"}.get(kind, "messages")


def runtime_context(graph: Pregel, values: Mapping[str, Any] | None) -> Any:
    """The runtime context a graph with a ``context_schema`` is invoked with (LangGraph's
    ``context=``; the react-agent template reads its prompt and model there): the schema
    built from ``agent.context`` in the project file, its defaults for the rest."""
    schema = getattr(graph, "context_schema", None)
    if schema is None:
        if values:
            raise GraphInputError("agent.context is set, but the graph has no context_schema")
        return None
    try:
        return schema(**dict(values or {}))
    except Exception as exc:
        raise GraphInputError(
            f"the graph's context_schema {getattr(schema, '__name__', schema)} cannot be built "
            f"from agent.context {dict(values or {})}: {type(exc).__name__}: {exc}; give its "
            "required fields in agent.context"
        ) from exc


def graph_input(
    case_input: Any, input_map: Mapping[str, str] | None, shape: InputShape = "state"
) -> Any:
    """The graph's input: one human message from ``input.message`` (or the input itself
    when it is a string), as a state ``{"messages": [...]}``, a list of messages or the text
    (``shape``); or the state keys ``input_map`` builds."""
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
        if shape == "text":
            return message
        human = [HumanMessage(content=message)]
        return human if shape == "messages" else {"messages": human}
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
    graph: Pregel, state: Any, config: dict[str, Any], context: Any = None
) -> tuple[dict[str, Any], list[AIMessage]]:
    """The final state and every AI message any node or task wrote, subgraphs included, in
    order. A functional-API entrypoint's return value (a list of messages, a message)
    becomes the state ``{"messages": […]}``."""
    final: dict[str, Any] = {}
    made: list[AIMessage] = []
    seen: set[Any] = set()
    async for namespace, mode, chunk in graph.astream(
        state, config, context=context, stream_mode=["values", "updates"], subgraphs=True
    ):
        if mode == "values":
            if not namespace and (as_state := _as_state(chunk)) is not None:
                final = as_state
            continue
        for update in (chunk or {}).values() if isinstance(chunk, dict) else ():
            for message in _messages_of(update):
                key = message.id or id(message)
                if isinstance(message, AIMessage) and key not in seen:
                    seen.add(key)
                    made.append(message)
    return final, made


def _as_state(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, BaseMessage):
        return {"messages": [value]}
    if isinstance(value, list) and value and all(isinstance(m, BaseMessage) for m in value):
        return {"messages": value}
    return None


def _messages_of(update: Any) -> list[BaseMessage]:
    """The messages of a node's update (its ``messages``) or a task's result (messages)."""
    value = update.get("messages") if isinstance(update, dict) else update
    items = value if isinstance(value, list) else [value]
    return [m for m in items if isinstance(m, BaseMessage)]


def output_contract(
    final: Mapping[str, Any], made: Sequence[AIMessage], state_fields: Sequence[str]
) -> dict[str, Any]:
    messages = [m for m in final.get("messages") or [] if isinstance(m, BaseMessage)]
    calls, ids = [], set()
    for message in made:
        by = "library" if (message.response_metadata or {}).get(HANDOFF_BACK) else "model"
        for c in message.tool_calls:
            if c.get("id") and c["id"] in ids:  # (a subgraph's message, seen again above)
                continue
            ids.add(c.get("id"))
            kind = "handoff" if is_handoff(c["name"]) else "tool"
            calls.append({"name": c["name"], "args": c["args"], "id": c.get("id"),
                          "kind": kind, "by": by, "agent": message.name})  # fmt: skip
    ai = [m for m in messages if isinstance(m, AIMessage)] or list(made)
    answer = next((m for m in reversed(ai) if _text(m)), None)
    output: dict[str, Any] = {
        "messages": convert_to_openai_messages(messages) if messages else [],
        "tool_calls": calls,
        "tools_called": [c["name"] for c in calls if c["kind"] == "tool"],
        "response": _text(answer) if answer is not None else "",
        "answered_by": answer.name if answer is not None else None,
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


class GraphConfig(KindConfig):
    """``agent: {graph: …}``: a compiled LangGraph graph, or a factory(ctx) returning one."""

    graph: ImportPath
    input_map: dict[str, str] | None = None  # graph state key → dotted path in the input
    state_fields: list[str] = Field(default_factory=list)  # final-state fields to output
    recursion_limit: int = Field(25, ge=1)
    stepwise: StepwiseConfig | None = None
    context: dict[str, Any] | None = None  # the graph's runtime context (its context_schema)


@register
class GraphKind(AgentKind):
    key = "graph"
    Config = GraphConfig
    prompt_read_when_built = True

    def describe(self, config: GraphConfig, loading: Loading) -> tuple[str, tuple[Path, ...]]:
        target = loading.target("agent", config.graph)
        if target is not None and not (is_graph(target) or callable(target)):
            expected = "a compiled LangGraph graph or a factory(ctx) returning one"
            loading.problem("agent", f"{config.graph} is a {type(target).__name__}: {expected}")
        return f"graph {config.graph}", source_of(config.graph) if target is not None else ()

    def build(self, config: GraphConfig, build: Build) -> Agent:
        target, ctx = import_target(config.graph), build.ctx
        with serving(ctx):  # a factory that fetches its prompt from Langfuse gets this one
            graph = target if is_graph(target) else call_factory(target, ctx, config.graph)
        if not is_graph(graph):
            raise AgentBuildError([
                f"{build.project_file}: suite '{build.suite}': field 'agent': the factory "
                f"{config.graph} returned a {type(graph).__name__}; expected a compiled "
                "LangGraph graph (StateGraph(...).compile() or create_react_agent(...))"
            ])  # fmt: skip
        options = GraphOptions(
            input_map=config.input_map, state_fields=tuple(config.state_fields),
            recursion_limit=config.recursion_limit,
            stepwise=stepwise_spec(config.stepwise, build.llm) if config.stepwise else None,
            done_field=config.done_field, customer=build.customer, context=config.context,
        )  # fmt: skip
        return GraphAgent(graph, options, ctx)
