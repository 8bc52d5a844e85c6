"""A graph's factory is called once per item (issue 46, item 1): whatever state it
creates (here a refund desk's ledger, a list in the factory's closure) is that item's, so
no item sees another's and a conversation's turns share theirs. A compiled graph named
directly is shared by every item, as it is given.

Before: the factory ran once per run; the second item found the first's refund in the
ledger and was refused."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import MessagesState, StateGraph

from eval_pipeline.agents.adapters.graph import GraphAgent, GraphConfig, GraphKind
from eval_pipeline.agents.adapters.kinds import Build
from eval_pipeline.agents.context import AgentContext
from eval_pipeline.agents.project_errors import AgentBuildError
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.llm.model_settings import LLMSettings

MODULE = __name__
CALLS: list[str] = []  # each call of the factories below
FAIL_FROM: list[int] = []  # the call from which ``build`` raises (none: never)


def build():
    """A refund desk allowing one refund per customer session: the ledger is the desk's
    own state, created with the graph."""
    CALLS.append("build")
    if FAIL_FROM and len(CALLS) >= FAIL_FROM[0]:
        raise ValueError("the desk's ledger is unavailable")
    ledger: list[str] = []

    def desk(state: MessagesState) -> dict:
        said = next(str(m.content) for m in reversed(state["messages"])
                    if isinstance(m, HumanMessage))  # fmt: skip
        order = re.search(r"order (\w+)", said)
        if order is None:
            return {"messages": [AIMessage(f"Refunds so far: {', '.join(ledger) or 'none'}")]}
        if ledger:
            return {"messages": [AIMessage(f"A refund was already issued ({ledger[0]}).")]}
        ledger.append(order[1])
        return {"messages": [AIMessage(f"Refund issued for order {order[1]}.")]}

    graph = StateGraph(MessagesState)
    graph.add_node(desk)
    graph.add_edge("__start__", "desk")
    return graph.compile()


def not_a_graph():
    CALLS.append("not_a_graph")
    return {"graph": None} if len(CALLS) > 1 else build()


SHARED = build()  # a compiled graph named directly: one for the whole run


@pytest.fixture(autouse=True)
def _calls():
    CALLS.clear(), FAIL_FROM.clear()
    yield
    CALLS.clear(), FAIL_FROM.clear()


def agent(attribute: str) -> GraphAgent:
    ctx = AgentContext(suite="desk", dataset_dir=Path("."), settings=LLMSettings(),
                       prompt_version=None)  # fmt: skip
    build_ = Build(project_file=Path("eval-pipeline.yaml"), suite="desk", ctx=ctx,
                   customer=None, llm=LLMSettings())  # fmt: skip
    made = GraphKind().build(GraphConfig(graph=f"{MODULE}:{attribute}"), build_)
    assert isinstance(made, GraphAgent)
    return made


def case(case_id: str, said: str | list[str]) -> GoldenCase:
    given = {"message": said} if isinstance(said, str) else {"conversation": {"turns": said}}
    metadata = {"category": "refunds", "difficulty": "easy", "tier": "smoke"}
    return GoldenCase.model_validate({"id": case_id, "input": given, "expected_output": {},
                                      "metadata": metadata})  # fmt: skip


def run_all(made: GraphAgent, cases: list[GoldenCase], repeats: int = 1) -> list[str]:
    async def items():
        return await asyncio.gather(*(made.run(c, repeat=r) for c in cases
                                      for r in range(repeats)))  # fmt: skip

    return [r.output["response"] for r in asyncio.run(items())]


def test_each_item_gets_the_factorys_state_of_its_own():
    made = agent("build")
    assert CALLS == ["build"]  # once when the run starts: checked before anything runs
    cases = [case(f"r{n}", f"Please refund order A{n}") for n in range(3)]
    answers = run_all(made, cases, repeats=2)
    assert answers == [f"Refund issued for order A{n}." for n in range(3) for _ in range(2)]
    assert len(CALLS) == 1 + 6  # then once per item, each repeat an item


def test_a_conversations_turns_share_the_state_the_factory_made():
    made = agent("build")
    talk = case("two-refunds", ["Please refund order B1", "And refund order B2 too",
                                "What did you refund?"])  # fmt: skip
    result = asyncio.run(made.run(talk, repeat=0)).output
    replies = [turn["agent"] for turn in result["transcript"]]
    assert replies == ["Refund issued for order B1.", "A refund was already issued (B1).",
                       "Refunds so far: B1"]  # fmt: skip
    assert len(CALLS) == 2  # the run's first call, then one for the whole conversation
    again = asyncio.run(made.run(case("one", "Please refund order C1"), repeat=0)).output
    assert again["response"] == "Refund issued for order C1."


def test_a_compiled_graph_named_directly_is_shared_by_every_item():
    """What the docs say is not isolated: state a module-level graph closes over."""
    made = agent("SHARED")
    assert made.factory is None and made.item_graph() is made.graph
    answers = run_all(made, [case("s1", "Please refund order D1"),
                             case("s2", "Please refund order D2")])  # fmt: skip
    assert answers[1].startswith("A refund was already issued")


def test_a_factory_that_fails_for_an_item_fails_that_item_with_its_own_error():
    made = agent("build")
    FAIL_FROM.append(2)
    with pytest.raises(ValueError, match="ledger is unavailable"):  # the agent's, not setup's
        asyncio.run(made.run(case("x", "Please refund order E1"), repeat=0))
    with pytest.raises(AgentBuildError, match=r"the factory .*:not_a_graph returned a dict"):
        asyncio.run(agent("not_a_graph").run(case("y", "refund order E2"), repeat=0))
