"""Human-in-the-loop (issue 36, item 2), from a team's directory outside this repository
through the CLI: a case scripts what the human answers at each ``interrupt()`` (in order,
or per interrupt name), the graph is resumed with ``Command(resume=…)`` until it ends or
the script runs out, and an item that stops at an interrupt is ``paused``: its own status
in the report and the results file, its interrupts in the output, and scored by the rule
in core/util/interrupts.py (0 unless the case expects the pause).

Before, the refund case stopped at the approval, its output ended at the question with
``response: ""``, and it scored like a finished answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from eval_pipeline_tests.helpers import CONFIG_ENV

CLI = str(Path(sys.executable).parent / "eval-pipeline")

AGENT = textwrap.dedent('''
    """A refund desk with no model: every step is a person's decision."""
    import operator
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import Send, interrupt


    def review(state: MessagesState):
        decision = interrupt({"action": "refund", "amount": "$17.50"})
        address = interrupt({"name": "confirm_address", "address": "1 Main St"})
        verdict = "approved" if decision.get("approved") else "declined"
        return {"messages": [AIMessage(f"refund {verdict}; address {address}")]}


    refund = StateGraph(MessagesState)
    refund.add_node("review", review)
    refund.add_edge(START, "review")
    refund = refund.compile()


    class Batch(TypedDict):
        messages: list
        decided: Annotated[list, operator.add]


    def fan_out(state: Batch):
        return [Send("approve", {"order": order}) for order in ("A100", "A200")]


    def approve(item: dict):
        answer = interrupt({"name": "approve", "order": item["order"]})
        return {"decided": [f"{item['order']}={answer}"]}


    def report(state: Batch):
        return {"messages": [AIMessage("decided " + ", ".join(sorted(state["decided"])))]}


    batch = StateGraph(Batch)
    batch.add_node("approve", approve)
    batch.add_node("report", report)
    batch.add_conditional_edges(START, fan_out, ["approve"])
    batch.add_edge("approve", "report")
    batch = batch.compile()


    def plan(state: MessagesState):
        return {"messages": [AIMessage("planned")]}


    def act(state: MessagesState):
        return {"messages": [AIMessage("acted")]}


    gated = StateGraph(MessagesState)
    gated.add_node("plan", plan)
    gated.add_node("act", act)
    gated.add_edge(START, "plan")
    gated.add_edge("plan", "act")
    gated.add_edge("act", END)
    gated = gated.compile(checkpointer=InMemorySaver(), interrupt_before=["act"])


    def chat(state: MessagesState):
        said = state["messages"][-1].content
        if "refund" in said:
            decision = interrupt({"action": "refund"})
            return {"messages": [AIMessage(f"refund {decision}")]}
        return {"messages": [AIMessage(f"you said {said}")]}


    talk = StateGraph(MessagesState)
    talk.add_node("chat", chat)
    talk.add_edge(START, "chat")
    talk = talk.compile()
''')


def case(cid: str, facts: list[str], resume=None, paused=None, **given) -> dict:
    given = given or {"message": "a refund please"}
    if resume is not None:
        given["resume"] = resume
    expected = {"expected_fields": facts} | ({"paused": paused} if paused is not None else {})
    return {
        "id": cid,
        "input": given,
        "expected_output": expected,
        "metadata": {"category": cid.split("-")[0], "difficulty": "easy", "tier": "full"},
    }


SUITES = {
    "refund": ("desk_agent:refund", [
        case("inorder-both", ["refund approved; address yes"], [{"approved": True}, "yes"]),
        case("byname-both", ["refund declined; address no"],
             {"confirm_address": ["no"], "refund": [{"approved": False}]}),
        case("runsout-second", ["refund approved"], [{"approved": True}]),
        case("expects-pause", [], paused=True),
        case("expects-but-ends", ["refund"], [{"approved": True}, "yes"], paused=True),
    ]),
    "batch": ("desk_agent:batch", [
        case("both-orders", ["A100=True", "A200=False"], [True, False]),
    ]),
    "gated": ("desk_agent:gated", [
        case("goes-on", ["acted"], ["go"]),
        case("stops-before", ["planned"]),
    ]),
    "talk": ("desk_agent:talk", [
        case("talk-answered", ["you said thanks"], [True],
             conversation={"turns": ["hello", "a refund please", "thanks"]}),
        case("talk-paused", [], conversation={"turns": ["hello", "a refund please", "thanks"]}),
    ]),
}  # fmt: skip


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    root = tmp_path_factory.mktemp("hitl") / "refund-repo"
    root.mkdir()
    (root / "desk_agent.py").write_text(AGENT)
    suites = {}
    for name, (agent, cases) in SUITES.items():
        (root / "evals" / name).mkdir(parents=True)
        (root / "evals" / name / "cases.yaml").write_text(yaml.safe_dump(cases))
        suites[name] = {"agent": agent, "dataset": f"evals/{name}", "evaluators": ["completeness"],
                        "thresholds": {"primary_metric": "completeness",
                                       "min_mean": {"completeness": 0.1}}}  # fmt: skip
    (root / "eval-pipeline.yaml").write_text(yaml.safe_dump({"suites": suites}))
    return root


def run(root: Path, suite: str, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    env |= {"EVAL_HOME": str(root / ".eval_home"), "PYTHONHASHSEED": "random"}
    done = subprocess.run([CLI, "run", "--suite", suite, "--json", f"{suite}.json", "--verbose",
                           *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done, json.loads((root / f"{suite}.json").read_text())


def items(result: dict) -> dict[str, dict]:
    return {i["item_id"]: i for i in result["items"]}


def test_scripted_answers_resume_the_graph_and_a_pause_is_scored_by_the_rule(team):
    done, result = run(team, "refund")
    found = items(result)
    assert found["inorder-both"]["status"] == "finished"
    assert found["inorder-both"]["scores"]["completeness"] == 1.0
    assert [(i["name"], i["answer"]) for i in found["inorder-both"]["interrupts"]] == [
        ("refund", {"approved": True}), ("confirm_address", "yes")]  # fmt: skip
    assert found["byname-both"]["scores"]["completeness"] == 1.0  # answered by name

    # The script ran out at the second interrupt: paused, and 0 whatever the answer says.
    ran_out = found["runsout-second"]
    assert ran_out["status"] == "paused" and ran_out["scores"]["completeness"] == 0.0
    assert ran_out["interrupts"][-1] == {"name": "confirm_address",
                                         "value": {"name": "confirm_address",
                                                   "address": "1 Main St"}}  # fmt: skip
    why = ran_out["score_details"]["completeness"]["comment"]
    assert why.startswith("paused at interrupt 'confirm_address' with no scripted answer")
    # A case that expects the pause is scored as usual; one that expects it and gets a
    # finished answer fails.
    assert found["expects-pause"]["status"] == "paused"
    assert found["expects-pause"]["scores"]["completeness"] == 1.0
    assert found["expects-but-ends"]["scores"]["completeness"] == 0.0
    assert (
        "finished without pausing"
        in (found["expects-but-ends"]["score_details"]["completeness"]["comment"])
    )

    assert result["summary"]["n_paused"] == 2
    report = " ".join(done.stdout.split())
    assert "paused: 2" in report
    assert "paused at interrupt confirm_address: " in report


def test_interrupts_pending_together_are_answered_each_by_its_id(team):
    _, result = run(team, "batch")
    both = items(result)["both-orders"]
    assert both["status"] == "finished" and both["scores"]["completeness"] == 1.0
    assert [i["answer"] for i in both["interrupts"]] == [True, False]


def test_a_static_breakpoint_pauses_unless_the_case_answers_it(team):
    _, result = run(team, "gated")
    found = items(result)
    assert found["goes-on"]["status"] == "finished"
    assert found["goes-on"]["interrupts"] == [{"name": "act", "value": None, "answer": "go"}]
    assert found["stops-before"]["status"] == "paused"
    assert found["stops-before"]["scores"]["completeness"] == 0.0


def test_a_conversation_stops_paused_where_no_answer_is_scripted(team):
    _, result = run(team, "talk")
    found = items(result)
    assert found["talk-answered"]["status"] == "finished"
    assert found["talk-paused"]["status"] == "paused"


def test_the_conversations_transcripts_say_where_it_paused(team):
    from eval_pipeline.core.store.results_store import ResultsStore

    _, result = run(team, "talk")
    store = ResultsStore(f"sqlite:///{team / '.eval_home' / 'results.sqlite'}")
    outputs = {o.item_id: o.output for o in store.read_outputs(result["run"]["run_id"])}
    assert outputs["talk-answered"]["stop_reason"] == "customer_done"
    assert outputs["talk-answered"]["turns"] == 3
    paused = outputs["talk-paused"]
    assert paused["stop_reason"] == "paused" and paused["turns"] == 2
    assert paused["transcript"][-1]["paused"] is True


def test_the_pages_cases_are_valid_cases():
    """docs/human-in-the-loop.md's case, and its per-name ``resume``, as printed."""
    import re

    from eval_pipeline.core.suites.cases import validate_cases
    from eval_pipeline.core.util.interrupts import ResumeScript

    page = (Path(__file__).resolve().parents[2] / "docs" / "human-in-the-loop.md").read_text()
    first, by_name = re.findall(r"```yaml\n(.*?)```", page, re.S)[:2]
    (case,) = validate_cases([("page", c) for c in yaml.safe_load(first)], origin="page")
    assert ResumeScript.of(case.input).answers(["issue_refund"]) == [{"approved": True}]
    script = ResumeScript.of(yaml.safe_load(by_name))
    assert script.answers(["confirm_address", "issue_refund"]) == ["yes", {"approved": False}]
    assert script.answers(["confirm_address"]) is None  # (its answers are used up)
