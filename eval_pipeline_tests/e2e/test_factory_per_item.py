"""A team's factory builds its graph with a stateful tool, and the verdict does not depend on
the order of the cases or on ``--workers`` (issue 46, item 1).

The team's refund desk (its own package, in a directory outside this repository, run
through the CLI as a subprocess) allows one refund per customer session: ``build()``
creates the session's ledger, a list its ``refund`` tool reads and appends to, so a second
refund in the same session is refused. Each case is one customer; one case is a
conversation asking for two refunds, whose second must be refused: its turns share the
ledger.

Before: the factory ran once per run (once per worker process), so the first item to run
got its refund and every later one was refused: 1 of 5 cases passed with one process, 2
with ``--workers 2``, and which ones followed the order of the cases file.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import yaml

from eval_pipeline_tests.teams import TeamShell

AGENT = '''
"""Our refund desk: one refund per customer session (the desk's ledger)."""
import re

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


def build():
    ledger = []  # the refunds issued in this session

    @tool
    def refund(order: str) -> str:
        """Refund an order; one refund per customer session."""
        if ledger:
            return f"refused: a refund was already issued in this session (order {ledger[0]})"
        ledger.append(order)
        return f"refund issued for order {order}"

    def desk(state: MessagesState) -> dict:
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(f"Done: {last.content}.")]}
        order = re.search(r"order (\\w+)", str(last.content))
        if order is None:
            return {"messages": [AIMessage("How can I help with your order?")]}
        call = {"name": "refund", "args": {"order": order[1]}, "id": f"call_{order[1]}"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    graph = StateGraph(MessagesState)
    graph.add_node(desk)
    graph.add_node("tools", ToolNode([refund]))
    graph.add_edge("__start__", "desk")
    graph.add_conditional_edges("desk", tools_condition)
    graph.add_edge("tools", "desk")
    return graph.compile()
'''


def case(case_id: str, said: str | list[str], fields: list[str]) -> dict:
    given = {"message": said} if isinstance(said, str) else {"conversation": {"turns": said}}
    return {"id": case_id, "input": given,
            "expected_output": {"expected_tools": ["refund"], "expected_fields": fields},
            "metadata": {"category": "refunds", "difficulty": "easy", "tier": "smoke"}}  # fmt: skip


CASES = [
    *(case(f"refund-{n}", f"Please refund order A{n}", ["refund issued"]) for n in range(1, 5)),
    case("second-refund", ["Please refund order B1", "Now refund order B2 as well"],
         ["already issued"]),
]


def write_desk(root: Path, cases: list[dict]) -> TeamShell:
    (root / "desk").mkdir(parents=True)
    (root / "desk" / "__init__.py").write_text("")
    (root / "desk" / "agent.py").write_text(textwrap.dedent(AGENT))
    (root / "evals").mkdir()
    (root / "evals" / "cases.yaml").write_text(yaml.safe_dump(cases, sort_keys=False))
    (root / "evals" / "thresholds.yaml").write_text(yaml.safe_dump(
        {"primary_metric": "completeness", "min_mean": {"completeness": 1.0}}))  # fmt: skip
    suite = {"agent": "desk.agent:build", "dataset": "evals",
             "evaluators": ["correctness", "completeness"]}  # fmt: skip
    (root / "eval-pipeline.yaml").write_text(yaml.safe_dump({"suites": {"refunds": suite}}))
    return TeamShell(root, model=None)


def scores(team: TeamShell, *args: str) -> tuple[str, dict[str, dict]]:
    """The run's verdict and each item's scores."""
    done = team.cli("run", "--suite", "refunds", "--cache", "off", "--json", "out.json", *args,
                    endpoint=False)  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    result = json.loads((team.root / "out.json").read_text())
    return result["verdict"], {i["item_id"]: i["scores"] for i in result["items"]}


def test_a_factorys_stateful_tool_gives_the_same_verdict_in_any_order_and_with_workers(
    tmp_path,
):
    team = write_desk(tmp_path / "desk-repo", CASES)
    one = scores(team)
    sharded = scores(team, "--workers", "2", "--concurrency", "2")
    (team.root / "evals" / "cases.yaml").write_text(yaml.safe_dump(CASES[::-1], sort_keys=False))
    reversed_ = scores(team, "--concurrency", "1")
    assert sharded == one and reversed_ == one, (one, sharded, reversed_)
    every = {"correctness": 1.0, "completeness": 1.0}
    assert one == ("PASS", {c["id"]: every for c in CASES})
