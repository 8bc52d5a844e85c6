"""A LangGraph graph as the agent under test, with a generic output contract.

Each item runs on a thread of its own, with a fresh in-memory store (adapters/stores.py)
and a fresh in-memory checkpointer when the graph was compiled with one or its
``langgraph.json`` declares one, on a graph of its own when ``agent:`` names a factory
(``GraphFactory``: called once more per item, so what it builds is the item's), so items
never share state; a compiled graph named directly is shared by every item. A graph with a
``context_schema`` gets ``agent.context`` there, and the prompt under test as its
``system_prompt`` field when it has one and the suite declares a prompt (LangChain's
templates read their prompt there). The case input becomes the graph's input state; the
output contract is read from the run:

- ``messages``: the final state's messages in OpenAI format;
- ``tool_calls``: ``[{name, args, id, kind, by, agent}]`` of every tool call, in call
  order, parallel calls and calls inside subgraphs included, each once: ``kind`` "tool",
  or "handoff" for a transfer to another agent (langgraph-supervisor's and
  langgraph-swarm's ``transfer_to_…`` tools, and any tool after which another named agent
  speaks no deeper in subgraphs: a ``Command(goto=…)`` from a tool); ``by`` "model", or
  "library" for the calls a library wrote itself (langgraph-supervisor's handoff-back);
  ``agent`` the name of the agent whose message made it (None for an unnamed one);
- ``tools_called``: the names of the tool calls, handoffs left out (what the built-in
  evaluators count); ``response``: the last AI text; ``answered_by``: the name of the
  agent that gave it;
- ``paused``: whether the run stopped at an interrupt the case scripts no answer for, and
  ``interrupts``: each interrupt met, ``{name, value, answer}`` (core/util/interrupts.py);
- every field listed in ``state_fields``, taken from the final state and made JSON-able.

A conversation case (core/suites/conversation.py) runs turn by turn on one thread: each customer
turn is one human message into the same state (the graph's checkpointer, or a fresh
in-memory one), the conversation ends when ``done_field`` of the state turns true.

Tokens are not read here: every model call is counted by llm/usage.py.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_openai_messages
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt
from pydantic import Field, field_validator

from eval_pipeline.agents.adapters.checkpoints import fresh_checkpointer
from eval_pipeline.agents.adapters.jsonable import jsonable
from eval_pipeline.agents.adapters.kinds import AgentKind, Build, KindConfig, Loading, register
from eval_pipeline.agents.adapters.offered_tools import offered_tools
from eval_pipeline.agents.adapters.stepwise import (
    StepwiseConfig,
    StepwiseSpec,
    stepwise,
    stepwise_spec,
)
from eval_pipeline.agents.adapters.stores import StoreSpec
from eval_pipeline.agents.context import AgentContext, ContextAgent
from eval_pipeline.agents.langfuse_prompt import serving
from eval_pipeline.agents.project_errors import AgentBuildError
from eval_pipeline.agents.targets import (
    ImportPath,
    call_factory,
    import_target,
    invoke_factory,
    is_graph,
    source_of,
)
from eval_pipeline.core.running.agent import Agent, AgentResult
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.suites.conversation import AgentTurn, Customer, conversation_spec, converse
from eval_pipeline.core.util.interrupts import (
    INTERRUPTS_FIELD,
    PAUSED_FIELD,
    ResumeScript,
    interrupt_name,
)
from eval_pipeline.evaluators.handoffs import HANDOFF_BACK, is_handoff

RESERVED = (
    "messages",
    "tool_calls",
    "tools_called",
    "response",
    "answered_by",
    PAUSED_FIELD,
    INTERRUPTS_FIELD,
)
INTERRUPT = "__interrupt__"  # where LangGraph's stream puts the pending interrupts


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
    configurable: Mapping[str, Any] | None = None  # more of the run's config["configurable"]
    store: StoreSpec = field(default_factory=StoreSpec)  # each item's store (its index)
    checkpointer: bool = False  # declared in langgraph.json: each item gets a fresh one


InputShape = Literal["state", "messages", "text"]


@dataclass(frozen=True)
class GraphFactory:
    """The team's factory of the graph (``build(ctx)``, a ``langgraph.json`` graph that is a
    function): ``first`` when the run starts, checked (a factory that raises, or returns
    no graph, stops the run before anything is written); called again for each item, whose
    graph, and everything the factory creates with it (a tool's list, a cache, a client, a
    vector store), is that item's. What it raises then is the item's failure."""

    target: Callable[..., Any]
    ctx: AgentContext
    path: str  # package.module:attribute, as ``agent:`` names it
    where: str  # the project file, suite and field, for the error naming it

    def first(self) -> Pregel:
        with serving(self.ctx):  # a factory that fetches its prompt from Langfuse gets this one
            return self._graph(call_factory(self.target, self.ctx, self.path))

    def __call__(self) -> Pregel:
        return self._graph(invoke_factory(self.target, self.ctx))

    def _graph(self, made: Any) -> Pregel:
        if not is_graph(made):
            raise AgentBuildError([
                f"{self.where}: the factory {self.path} returned a {type(made).__name__}; "
                "expected a compiled LangGraph graph (StateGraph(...).compile() or "
                "create_react_agent(...))"
            ])  # fmt: skip
        return made


class GraphAgent(ContextAgent):
    """``graph``: the one the run started with (its input shape, its context and the tools
    it offers are read there); ``factory``: what makes each item's graph (None: ``graph``
    was given directly, and every item runs it)."""

    def __init__(self, graph: Pregel, options: GraphOptions, ctx: AgentContext,
                 factory: GraphFactory | None = None):  # fmt: skip
        super().__init__(ctx)
        self.graph, self.options, self.factory = graph, options, factory
        self.shape = input_shape(graph)
        self.context = runtime_context(graph, options.context, ctx)

    def item_graph(self) -> Pregel:
        """A graph for one item (a conversation's turns share it): the factory's, made
        afresh, else the one given."""
        return self.graph if self.factory is None else self.factory()

    @functools.cached_property
    def offered_tools(self) -> frozenset[str] | None:
        """The tools and handoffs the graph offers its models (agents/adapters/offered_tools.py)."""
        return offered_tools(self.graph)

    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        with serving(self.ctx):
            return await self._run(case, repeat, callbacks)

    async def _run(self, case: GoldenCase, repeat: int, callbacks: Sequence[Any]) -> AgentResult:
        graph = self.item_graph()
        spec = conversation_spec(case)
        script = ResumeScript.of(case.input)
        fresh: dict[str, Any] = {"store": self.options.store.fresh(graph)}
        if (graph.checkpointer not in (None, False) or self.options.checkpointer
                or spec is not None or script):  # fmt: skip
            fresh["checkpointer"] = fresh_checkpointer(graph)
        graph = graph.copy(fresh)
        config: RunnableConfig = {
            "configurable": {
                **(self.options.configurable or {}),
                "thread_id": f"{case.id}:{repeat}:{uuid.uuid4().hex}",
            },
            "callbacks": list(callbacks),
            "recursion_limit": self.options.recursion_limit,
        }
        if spec is not None:
            session = GraphSession(graph, config, self.options, self.shape, self.context, script)
            return AgentResult(await converse(session, spec, self.options.customer))
        state = graph_input(case.input, self.options.input_map, self.shape)
        run = await run_graph(graph, state, config, self.context, script)
        output = output_contract(run, self.options.state_fields)
        reference = (case.expected_output or {}).get(self.options.stepwise.reference) if (
            self.options.stepwise and isinstance(case.expected_output, dict)
        ) else None  # fmt: skip
        if reference and self.options.stepwise and not run.paused:
            made = self.item_graph()  # (the teacher-forced steps start afresh, as its store)
            forced = made.copy({"store": self.options.store.fresh(made)})
            output |= await stepwise(forced, self.options.stepwise, reference, callbacks,
                                     self.context)  # fmt: skip
        return AgentResult(output)


class GraphSession:
    """One thread of a graph: each customer turn continues the same state. An interrupt
    in a turn is answered from the case's script within the turn; with no answer left the
    turn ends paused, and so does the conversation (the simulated customer plays the
    customer, never the human who approves)."""

    def __init__(self, graph: Pregel, config: RunnableConfig, options: GraphOptions,
                 shape: InputShape = "state", context: Any = None,
                 script: ResumeScript | None = None):  # fmt: skip
        self.graph, self.config, self.options = graph, config, options
        self.shape, self.context = shape, context
        self.script = script or ResumeScript()
        self.run = GraphRun()

    async def send(self, text: str) -> AgentTurn:
        turn = await run_graph(self.graph, graph_input(text, None, self.shape), self.config,
                               self.context, self.script)  # fmt: skip
        self.run = self.run.then(turn)
        final = self.run.final
        state = {name: jsonable(final.get(name)) for name in self.options.state_fields}
        finalized = False
        if done := self.options.done_field:
            head, _, rest = done.partition(".")
            finalized = bool(lookup(jsonable(final.get(head)), rest or "."))
        return AgentTurn(
            customer=text,
            reply=next((t for m in reversed(turn.made) if (t := _text(m))), ""),
            tool_calls=[{"name": c["name"], "args": c["args"], "id": c.get("id")}
                        for m in turn.made for c in m.tool_calls],
            state=state,
            finalized=finalized,
            paused=turn.paused,
        )  # fmt: skip

    def output(self) -> dict[str, Any]:
        return output_contract(self.run, self.options.state_fields)


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
    shapes: dict[Any, InputShape] = {"object": "state", "string": "text"}
    return shapes.get(kind, "messages")


def runtime_context(graph: Pregel, values: Mapping[str, Any] | None,
                    ctx: AgentContext | None = None) -> Any:  # fmt: skip
    """The runtime context a graph with a ``context_schema`` is invoked with (LangGraph's
    ``context=``; the react-agent and memory-agent templates read their prompt and model
    there): the schema built from ``agent.context`` in the project file, the prompt under
    test as its ``system_prompt`` field (when it has one, the suite declares a prompt and
    ``agent.context`` does not set it), its defaults for the rest."""
    schema = getattr(graph, "context_schema", None)
    if schema is None:
        if values:
            raise GraphInputError("agent.context is set, but the graph has no context_schema")
        return None
    values = dict(values or {})
    if (ctx is not None and ctx.prompt_version is not None and "system_prompt" not in values
            and "system_prompt" in context_fields(schema)):  # fmt: skip
        values["system_prompt"] = ctx.system_prompt()
    try:
        return schema(**values)
    except Exception as exc:
        raise GraphInputError(
            f"the graph's context_schema {getattr(schema, '__name__', schema)} cannot be built "
            f"from agent.context {dict(values or {})}: {type(exc).__name__}: {exc}; give its "
            "required fields in agent.context"
        ) from exc


def context_fields(schema: Any) -> tuple[str, ...]:
    """The field names of a context schema: a dataclass, a pydantic model or a TypedDict."""
    if dataclasses.is_dataclass(schema):
        return tuple(f.name for f in dataclasses.fields(schema) if f.init)
    fields = getattr(schema, "model_fields", None) or getattr(schema, "__annotations__", {})
    return tuple(fields)


def context_model(graph: Any, values: Mapping[str, Any] | None = None) -> str | None:
    """The model a graph's context names for the graph's own client, as LangChain's
    templates write it (``Context.model``: "provider/model" or "provider:model", built with
    ``init_chat_model``): ``agent.context``'s, else the schema's default; None for a graph
    without one."""
    schema = getattr(graph, "context_schema", None)
    if schema is None or "model" not in context_fields(schema):
        return None
    value = (values or {}).get("model")
    if value is None and dataclasses.is_dataclass(schema):
        value = next((f.default for f in dataclasses.fields(schema) if f.name == "model"), None)
    elif value is None and (found := (getattr(schema, "model_fields", None) or {}).get("model")):
        value = found.default
    return value if isinstance(value, str) and MODEL_NAME.match(value) else None


MODEL_NAME = re.compile(r"^[\w.-]+[/:]\S+$")  # provider/model or provider:model


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


@dataclass(frozen=True)
class GraphRun:
    """What running a graph on one thread gave: its final state, every AI message any
    node or task wrote (subgraphs included, in order), and the interrupts it met, each
    ``{name, value, answer}`` (no ``answer`` for the one it stopped at)."""

    final: dict[str, Any] = field(default_factory=dict)
    made: tuple[AIMessage, ...] = ()
    interrupts: tuple[dict[str, Any], ...] = ()
    paused: bool = False  # it stopped at an interrupt the script had no answer for
    depths: tuple[int, ...] = ()  # how deep in subgraphs each message of ``made`` was written

    def then(self, later: GraphRun) -> GraphRun:
        """This run continued by ``later`` on the same thread (a conversation's next turn)."""
        return GraphRun(later.final or self.final, self.made + later.made,
                        self.interrupts + later.interrupts, later.paused,
                        self.depths + later.depths)  # fmt: skip


async def run_graph(
    graph: Pregel,
    state: Any,
    config: RunnableConfig,
    context: Any = None,
    script: ResumeScript | None = None,
) -> GraphRun:
    """Run the graph to its end, answering each interrupt from ``script`` with
    ``Command(resume=…)`` (several pending at once: each by its id) until the graph ends
    or the script has no answer (core/util/interrupts.py). A static breakpoint is an interrupt
    named after its node, with no value; any scripted answer goes on from it. A
    functional-API entrypoint's return value (a list of messages, a message) becomes the
    state ``{"messages": […]}``."""
    run, seen = GraphRun(), set[Any]()
    script = script or ResumeScript()
    while True:
        final, made, depths, pending = await _stream(graph, state, config, context, seen)
        run = run.then(GraphRun(final, tuple(made), depths=tuple(depths)))
        breakpoint_at = () if pending else await _breakpoint(graph, config)
        if not pending and not breakpoint_at:
            return run
        names = await _interrupt_names(graph, config, pending) if pending else list(breakpoint_at)
        values = [jsonable(i.value) for i in pending] or [None] * len(names)
        answers = script.answers(names)
        if answers is None:
            waiting = tuple({"name": n, "value": v} for n, v in zip(names, values, strict=True))
            return dataclasses.replace(run, interrupts=run.interrupts + waiting, paused=True)
        answered = tuple({"name": n, "value": v, "answer": a}
                         for n, v, a in zip(names, values, answers, strict=True))  # fmt: skip
        run = dataclasses.replace(run, interrupts=run.interrupts + answered)
        if not pending:  # a breakpoint: LangGraph goes on from it with no input
            state = None
        elif len(pending) == 1:
            state = Command(resume=answers[0])
        else:
            state = Command(resume={i.id: a for i, a in zip(pending, answers, strict=True)})


async def _breakpoint(graph: Pregel, config: RunnableConfig) -> tuple[str, ...]:
    """The nodes a static breakpoint (``compile(interrupt_before=…)`` or ``…_after``)
    stopped the graph before: the thread has nodes still to run."""
    if graph.checkpointer in (None, False):
        return ()
    return tuple((await graph.aget_state(config)).next)


async def _stream(
    graph: Pregel, state: Any, config: RunnableConfig, context: Any, seen: set[Any]
) -> tuple[dict[str, Any], list[AIMessage], list[int], list[Interrupt]]:
    """One stretch of the graph, up to its end or its next interrupt(s): the final state,
    the AI messages written, how deep in subgraphs each was, the pending interrupts."""
    final: dict[str, Any] = {}
    made: list[AIMessage] = []
    depths: list[int] = []
    pending: list[Interrupt] = []
    async for namespace, mode, chunk in graph.astream(
        state, config, context=context, stream_mode=["values", "updates"], subgraphs=True
    ):
        if mode == "values":
            if not namespace and (as_state := _as_state(chunk)) is not None:
                final = {k: v for k, v in as_state.items() if k != INTERRUPT}
            continue
        if not namespace and isinstance(chunk, dict) and INTERRUPT in chunk:
            known = {i.id for i in pending}  # (subgraphs' included; a chunk each, or together)
            pending += [i for i in chunk[INTERRUPT] if i.id not in known]
            continue
        for update in (chunk or {}).values() if isinstance(chunk, dict) else ():
            for message in _messages_of(update):
                key = message.id or id(message)
                if isinstance(message, AIMessage) and key not in seen:
                    seen.add(key)
                    made.append(message)
                    depths.append(len(namespace))
    return final, made, depths, pending


async def _interrupt_names(
    graph: Pregel, config: RunnableConfig, pending: Sequence[Interrupt]
) -> list[str | None]:
    """Each interrupt's name: from its payload, else the node it happened in (readable
    when the thread has a checkpointer)."""
    nodes: dict[str, str] = {}
    if graph.checkpointer not in (None, False):
        snapshot = await graph.aget_state(config)
        nodes = {i.id: task.name for task in snapshot.tasks for i in task.interrupts}
    return [interrupt_name(i.value, nodes.get(i.id)) for i in pending]


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


def output_contract(run: GraphRun, state_fields: Sequence[str]) -> dict[str, Any]:
    final = run.final
    messages = [m for m in final.get("messages") or [] if isinstance(m, BaseMessage)]
    calls, ids = [], set()
    for index, message in enumerate(run.made):
        by = "library" if (message.response_metadata or {}).get(HANDOFF_BACK) else "model"
        passed_on = _passed_on(index, run)
        for c in message.tool_calls:
            if c.get("id") and c["id"] in ids:  # (a subgraph's message, seen again above)
                continue
            ids.add(c.get("id"))
            kind = "handoff" if is_handoff(c["name"]) or passed_on else "tool"
            calls.append({"name": c["name"], "args": c["args"], "id": c.get("id"),
                          "kind": kind, "by": by, "agent": message.name})  # fmt: skip
    ai = [m for m in messages if isinstance(m, AIMessage)] or list(run.made)
    answer = next((m for m in reversed(ai) if _text(m)), None)
    output: dict[str, Any] = {
        "messages": convert_to_openai_messages(messages) if messages else [],
        "tool_calls": calls,
        "tools_called": [c["name"] for c in calls if c["kind"] == "tool"],
        "response": _text(answer) if answer is not None else "",
        "answered_by": answer.name if answer is not None else None,
        PAUSED_FIELD: run.paused,
        INTERRUPTS_FIELD: list(run.interrupts),
    }
    for name in state_fields:
        output[name] = jsonable(final.get(name))
    return output


def _passed_on(index: int, run: GraphRun) -> bool:
    """Whether message ``index``'s one tool call handed the conversation over: the next AI
    message is another named agent's, written no deeper in subgraphs (a tool that returned
    ``Command(goto=agent, graph=Command.PARENT)``, whatever its name). An agent the tool
    ran inside itself (an agent used as a tool) writes deeper: that call is a tool call."""
    message = run.made[index]
    if len(message.tool_calls) != 1 or not message.name or index + 1 >= len(run.made):
        return False
    following = run.made[index + 1]
    nested = run.depths[index + 1] > run.depths[index]
    return bool(following.name) and following.name != message.name and not nested


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
    # Values the graph reads from ``config["configurable"]`` (e.g. a user id), for every item
    configurable: dict[str, Any] | None = None

    @field_validator("configurable")
    @classmethod
    def _own_thread(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value and "thread_id" in value:
            raise ValueError("thread_id is set per item (each item runs on a thread of its "
                             "own); remove it from agent.configurable")  # fmt: skip
        return value


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
        target, ctx, declared = import_target(config.graph), build.ctx, build.langgraph
        factory = None if is_graph(target) else GraphFactory(
            target, ctx, config.graph, f"{build.project_file}: suite '{build.suite}': field 'agent'"
        )  # fmt: skip
        graph = target if factory is None else factory.first()
        options = GraphOptions(
            input_map=config.input_map, state_fields=tuple(config.state_fields),
            recursion_limit=config.recursion_limit,
            stepwise=stepwise_spec(config.stepwise, build.llm) if config.stepwise else None,
            done_field=config.done_field, customer=build.customer, context=config.context,
            configurable=config.configurable,
            store=StoreSpec(declared.index, declared.path.parent) if declared else StoreSpec(),
            checkpointer=bool(declared and declared.checkpointer),
        )  # fmt: skip
        return GraphAgent(graph, options, ctx, factory)
