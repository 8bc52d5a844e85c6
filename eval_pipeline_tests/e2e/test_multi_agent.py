"""Multi-agent systems as teams build them (issue 36): a langgraph-supervisor desk
(zoo/supervisor_desk), run from a team's directory outside this repository through the
CLI, each run in a fresh process with ``PYTHONHASHSEED=random``.

Replay must survive what the library makes up on every run: a ``uuid4()`` tool-call id on
each handoff-back message, and handoff tools built from a ``set`` of agent names (their
order follows the hash seed). Before, CI's ``--replay`` of a clean recording ended ERROR,
"replay miss ×11 … differs at messages[5].tool_calls[0].id".

Its cases are written both ways (issue 46, item 5): the data tools only, and with the
routes, the handoffs named in ``expected_tools`` as langgraph-supervisor names them."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.desk import WORSE_PROMPT, DeskModel, write_desk_project
from eval_pipeline_tests.model_server import LocalOpenAIServer
from eval_pipeline_tests.teams import Case, TeamShell


class Desk(TeamShell):
    def result(self, name: str) -> dict:
        return json.loads((self.root / name).read_text())


@pytest.fixture
def desk(tmp_path):
    root = tmp_path / "desk-repo"
    root.mkdir()
    write_desk_project(root)
    with LocalOpenAIServer(chat_model=lambda name: DeskModel(model_name=name),
                           models=["gpt-4o-mini"]) as model:  # fmt: skip
        yield Desk(root, model)


def test_a_supervisor_desk_replays_across_hash_seeds_and_a_stale_recording_misses(desk):
    live = desk.cli("run", "--suite", "desk", "--json", "live.json", "--verbose")
    assert live.returncode == 0, live.stdout + live.stderr
    first = desk.result("live.json")
    assert first["summary"]["metrics"]["correctness"] == 1.0
    # The cases that list their routes (the handoffs by name) score as the ones that do
    # not: every route was right (before, 0.5 or 0.67 each, "missing ['transfer_to_…']").
    routed = {i["item_id"]: i["scores"]["correctness"] for i in first["items"]
              if i["item_id"].startswith("route-")}  # fmt: skip
    assert routed == {"route-bill-a200": 1.0, "route-ship-a100": 1.0, "route-refund-a200": 1.0}
    said = " ".join(live.stdout.split())
    assert "warning: expected_tools names" not in said
    assert ("tools called: get_invoice · handoffs: transfer_to_billing_agent, "
            "transfer_back_to_supervisor" in said)  # fmt: skip
    # Handoffs are handoffs: marked, once each, the library's own marked as such, and not
    # among the tools called (what the evaluators count).
    store = ResultsStore(f"sqlite:///{desk.root / '.eval_home' / 'results.sqlite'}")
    outputs = store.read_outputs(first["run"]["run_id"])
    bill = next(o for o in outputs if o.item_id == "bill-a100").output
    assert bill["tools_called"] == ["get_invoice"]
    assert [(c["name"], c["kind"], c["by"], c["agent"]) for c in bill["tool_calls"]] == [
        ("transfer_to_billing_agent", "handoff", "model", "supervisor"),
        ("get_invoice", "tool", "model", "billing_agent"),
        ("transfer_back_to_supervisor", "handoff", "library", "billing_agent"),
    ]
    assert bill["answered_by"] == "supervisor" and "$42.00" in bill["response"]
    # The refund waits for a supervisor (interrupt() in a tool of a subgraph): the case's
    # scripted answer resumes it, and a case that scripts none ends paused, as it expects.
    refunds = {o.item_id: o for o in outputs if o.item_id.startswith("refund-")}
    assert "refund of $17.50 issued" in refunds["refund-a200"].output["response"]
    assert refunds["refund-a200"].output["interrupts"] == [{
        "name": "issue_refund", "answer": {"approved": True},
        "value": {"action": "issue_refund", "order_id": "A200", "amount": "$17.50"}}]  # fmt: skip
    assert "declined" in refunds["refund-denied"].output["response"]
    assert {k: o.status for k, o in refunds.items()} == {
        "refund-a100": "finished", "refund-a200": "finished", "refund-denied": "finished",
        "refund-waits": "paused"}  # fmt: skip

    recorded = desk.cli("run", "--suite", "desk", "--record", "--json", "rec.json")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    # The same agent again, its model's tool-call ids and the library's uuids drawn afresh:
    # UNCHANGED, where every re-run was UNDECIDED (outputs compared with their ids).
    assert "UNCHANGED" in recorded.stdout, recorded.stdout.strip().splitlines()[-1]
    recording = (desk.root / "recordings" / "desk" / "v0.jsonl").read_text()
    assert re.search(r'"tool_call_id": "[0-9a-f]{8}-[0-9a-f]{4}-', recording)  # uuid4s
    served = desk.model.requests
    for attempt in range(2):  # two fresh processes, two hash seeds, no model server
        replayed = desk.cli("run", "--suite", "desk", "--replay", "--json", "rep.json",
                            endpoint=False)  # fmt: skip
        assert replayed.returncode == 0, (attempt, replayed.stdout + replayed.stderr)
        assert desk.model.requests == served
        again = desk.result("rep.json")
        assert again["summary"]["metrics"] == desk.result("rec.json")["summary"]["metrics"]
        assert not [o for o in again["items"] if o["error"]]

    agent = desk.root / "desk" / "agent.py"  # a worse supervisor prompt: it answers itself
    source = agent.read_text()
    start = source.index("SUPERVISOR_PROMPT = (")
    end = source.index(")\n", start) + 2
    agent.write_text(f"{source[:start]}SUPERVISOR_PROMPT = {WORSE_PROMPT!r}\n{source[end:]}")
    worse = desk.cli("run", "--suite", "desk", "--baseline-run", first["run"]["run_id"])
    assert worse.returncode == 1, worse.stdout + worse.stderr  # no handoff counts as a tool
    assert worse.stdout.strip().splitlines()[-1].startswith("VERDICT: FAIL")

    stale = desk.cli("run", "--suite", "desk", "--replay", endpoint=False)  # a miss
    assert stale.returncode == 2, stale.stdout + stale.stderr
    assert "replay miss" in stale.stdout.strip().splitlines()[-1]
    said = " ".join(stale.stderr.split())
    parted = ("messages[0].content, from character 42 of 179 recorded, 73 now (recorded 'You "
              "are the supervisor of a support desk. Hand billing")  # fmt: skip
    assert parted in said  # (where the prompts part)
    assert "now 'You are the supervisor of a support desk. Answer every question yourself.')" \
        in said  # fmt: skip


def test_an_expected_name_the_desk_does_not_offer_is_a_warning_of_the_run(desk):
    """A route written as the agent's name (``transfer_to_billing``: the tool is
    ``transfer_to_billing_agent``) can never be called: the run says so before it scores
    it as missing, naming the case and the handoff meant, read from the graph."""
    cases = desk.root / "evals" / "desk" / "cases.yaml"
    written = yaml.safe_load(cases.read_text())
    typo = Case("route-typo", "How much was the invoice for order A200?",
                ["transfer_to_billing", "get_invoice"], ["$17.50"])  # fmt: skip
    cases.write_text(yaml.safe_dump({"cases": [*written["cases"], typo.as_dict()]}))
    done = desk.cli("run", "--suite", "desk", "--json", "typo.json")
    said = " ".join(done.stdout.split())
    assert done.returncode == 0, said + done.stderr
    assert ("warning: expected_tools names what is neither a tool nor a handoff the agent "
            "offers, so no run can call it: 'transfer_to_billing' (case route-typo) (did you "
            "mean 'transfer_to_billing_agent'?); it offers delivery_estimate, get_invoice, "
            "issue_refund, refund_status, track_package, transfer_back_to_supervisor, "
            "transfer_to_billing_agent, transfer_to_shipping_agent" in said), said  # fmt: skip
    scores = {i["item_id"]: i["scores"]["correctness"] for i in desk.result("typo.json")["items"]}
    assert scores["route-typo"] == 0.5


def test_init_seeds_the_prompt_from_the_constant_named_after_it(desk):
    """``init --prompt shopdesk/supervisor`` seeded the prompt with BILLING_PROMPT, the
    first of the desk's three ``…_PROMPT`` constants, without saying so (the supervisor
    then never delegated). It takes the one named after the prompt; when none is, it lists
    them and asks, writing nothing."""
    project = desk.root / "eval-pipeline.yaml"
    before = project.read_text()
    picked = desk.cli("init", "--agent", "desk.agent:build", "--name", "desk2",
                      "--prompt", "shopdesk/supervisor")  # fmt: skip
    assert picked.returncode == 0, picked.stdout + picked.stderr
    assert "from desk.agent:SUPERVISOR_PROMPT" in " ".join(picked.stdout.split())
    seeded = (desk.root / "prompts" / "shopdesk" / "supervisor" / "v1.yaml").read_text()
    assert "Hand billing questions" in seeded

    project.write_text(before)
    asked = desk.cli("init", "--agent", "desk.agent:build", "--name", "helpdesk",
                     "--prompt", "shopdesk/assistant")  # fmt: skip
    said = " ".join((asked.stdout + asked.stderr).split())
    assert asked.returncode == 2, said
    assert (
        "3 prompt constants (desk.agent:SUPERVISOR_PROMPT, desk.agent:BILLING_PROMPT, "
        "desk.agent:SHIPPING_PROMPT)"
        in said
        and "--prompt-from MODULE:CONSTANT" in said
    )
    assert project.read_text() == before and not (desk.root / "evals" / "helpdesk").exists()
    assert not (desk.root / "prompts" / "shopdesk" / "assistant").exists()

    chosen = desk.cli("init", "--agent", "desk.agent:build", "--name", "helpdesk",
                      "--prompt", "shopdesk/assistant", "--prompt-from",
                      "desk.agent:BILLING_PROMPT")  # fmt: skip
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr
    text = (desk.root / "prompts" / "shopdesk" / "assistant" / "v1.yaml").read_text()
    assert "billing agent" in text


def test_trajectory_match_can_leave_the_handoffs_out():
    """A supervisor desk's trajectory as the graph adapter stores it (OpenAI format): with
    ``handoffs: false`` it matches a reference written as the work itself (the data tool
    and the answer); with handoffs it does not, and a missing data tool fails either way."""
    from eval_pipeline.evaluators.trajectory import trajectory_match

    def call(name: str, call_id: str, **args: str) -> dict:
        return {"id": call_id, "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}  # fmt: skip

    def ai(content: str, *calls: dict) -> dict:
        return {"role": "assistant", "content": content, **({"tool_calls": list(calls)}
                                                            if calls else {})}  # fmt: skip

    def result(call_id: str, content: str) -> dict:
        return {"role": "tool", "tool_call_id": call_id, "content": content}

    question = {"role": "user", "content": "How much was the invoice for order A100?"}
    answer = "Order A100: $42.00, paid."
    desk_run = [
        question,
        ai("", call("transfer_to_billing_agent", "c1")),
        result("c1", "Successfully transferred to billing_agent"),
        ai("", call("get_invoice", "c2", order_id="A100")),
        result("c2", "$42.00, paid"),
        ai(answer),
        ai("Transferring back to supervisor", call("transfer_back_to_supervisor", "5f0e-0")),
        result("5f0e-0", "Successfully transferred back to supervisor"),
        ai(answer),
    ]
    reference = {"trajectory": [
        {"role": "user", "content": "How much was the invoice for order A100?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"name": "get_invoice", "args": {"order_id": "A100"}}]},
        {"role": "tool", "content": "$42.00, paid"},
        {"role": "assistant", "content": "Order A100: $42.00, paid."},
        {"role": "assistant", "content": "Order A100: $42.00, paid."},
    ]}  # fmt: skip
    output = {"messages": desk_run}
    without = trajectory_match(mode="strict", handoffs=False)
    assert without(output=output, expected_output=reference).value == 1.0
    assert trajectory_match(mode="strict")(output=output, expected_output=reference).value == 0.0
    no_tool = {"messages": desk_run[:3] + desk_run[5:]}
    assert without(output=no_tool, expected_output=reference).value == 0.0


def test_an_agent_used_as_a_tool_is_a_tool_call_not_a_handoff():
    """An agent a tool runs inside itself (LangGraph's "agents as tools") writes its
    messages deeper in subgraphs than the caller: that call is a tool call. A tool after
    which another named agent speaks at the caller's own level is a handoff (the swarm's
    ``ask_alice`` in test_teams.py)."""
    import asyncio

    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from eval_pipeline.agents.adapters.graph import output_contract, run_graph

    def helper(state: MessagesState):
        return {"messages": [AIMessage("the invoice is $42.00", name="helper")]}

    inner = StateGraph(MessagesState)
    inner.add_node("helper", helper)
    inner.add_edge(START, "helper")
    inner = inner.compile()

    @tool
    def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        return inner.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content

    def boss(state: MessagesState):
        if any(m.type == "tool" for m in state["messages"]):
            return {"messages": [AIMessage("It is $42.00.", name="boss")]}
        call = {"name": "ask_helper", "args": {"question": "invoice?"}, "id": "call_1"}
        return {"messages": [AIMessage("", name="boss", tool_calls=[call])]}

    outer = StateGraph(MessagesState)
    outer.add_node("boss", boss)
    outer.add_node("tools", ToolNode([ask_helper]))
    outer.add_edge(START, "boss")
    outer.add_conditional_edges("boss", tools_condition)
    outer.add_edge("tools", "boss")
    outer.add_edge("boss", END)
    graph = outer.compile()

    run = asyncio.run(run_graph(graph, {"messages": [HumanMessage("invoice?")]},
                                {"configurable": {"thread_id": "t"}}))  # fmt: skip
    assert [m.name for m in run.made] == ["boss", "helper", "boss"]  # (the helper streamed)
    output = output_contract(run, ())
    assert [(c["name"], c["kind"]) for c in output["tool_calls"]] == [("ask_helper", "tool")]
    assert output["tools_called"] == ["ask_helper"] and output["answered_by"] == "boss"
