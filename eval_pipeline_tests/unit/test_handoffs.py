"""Handoffs as teams write them (issue 46, item 5): langgraph-supervisor names its handoffs
as tools (``transfer_to_billing_agent``), so a team lists them in ``expected_tools`` and in
its reference trajectories. ``correctness`` scored a perfectly routed supervisor case 0.5,
"missing ['transfer_to_billing_agent']" (handoffs are left out of ``tools_called``); a
name that is neither a tool nor a handoff of the agent could never be called, and nothing
said so."""

from __future__ import annotations

import json

import pytest

from eval_pipeline.core.suites.cases import GoldenCase, unknown_expected_tools
from eval_pipeline.evaluators import behavioural_overall, correctness, groundedness
from eval_pipeline.evaluators.trajectory import trajectory_match


def call(name: str, kind: str, agent: str, by: str = "model", **args: str) -> dict:
    return {"name": name, "args": args, "id": f"id-{name}", "kind": kind, "by": by,
            "agent": agent}  # fmt: skip


def desk_output(route: str, tool: str, answer: str) -> dict:
    """The graph adapter's output for a supervisor desk item (as zoo/supervisor_desk makes
    it): the supervisor hands over, the agent calls its tool, the library hands back."""
    calls = [call(f"transfer_to_{route}", "handoff", "supervisor"),
             call(tool, "tool", route, order_id="A100"),
             call("transfer_back_to_supervisor", "handoff", route, by="library")]  # fmt: skip
    return {"tool_calls": calls, "tools_called": [tool], "response": answer}


ROUTED = desk_output("billing_agent", "get_invoice", "Order A100: $42.00, paid.")
MISROUTED = desk_output("shipping_agent", "track_package", "Order A100: delivered.")
BILLING = {"expected_tools": ["transfer_to_billing_agent", "get_invoice"],
           "expected_fields": ["$42.00"]}  # fmt: skip


def test_a_perfectly_routed_supervisor_case_scores_1_with_its_handoff_listed():
    """Before: 0.5, "missing ['transfer_to_billing_agent']"."""
    score = correctness(output=ROUTED, expected_output=BILLING)
    assert score.value == 1.0
    listed = "['transfer_to_billing_agent', 'get_invoice']"
    assert score.comment == f"called every expected tool ({listed})"
    assert behavioural_overall(output=ROUTED, expected_output=BILLING).value == 1.0
    # the same case written without the handoff scores the same
    plain = {"expected_tools": ["get_invoice"]}
    assert correctness(output=ROUTED, expected_output=plain).value == 1.0
    # the library's own handoff back counts when a team lists it
    back = {"expected_tools": ["transfer_to_billing_agent", "transfer_back_to_supervisor"]}
    assert correctness(output=ROUTED, expected_output=back).value == 1.0


def test_a_wrong_route_is_missing_its_handoff_and_says_where_it_went():
    score = correctness(output=MISROUTED, expected_output=BILLING)
    assert score.value == 0.0
    assert score.comment == (
        "missing ['transfer_to_billing_agent', 'get_invoice']; handoffs made: "
        "['transfer_to_shipping_agent', 'transfer_back_to_supervisor']"
    )


def test_a_handoff_is_matched_only_as_a_handoff_made_whatever_its_name():
    """A swarm's own handoff tool (``ask_alice``, a Command(goto=…) tool) is marked a
    handoff by the graph adapter: named in expected_tools, it is matched there. An output
    with no marks (a callable agent's) names every call in ``tools_called``."""
    swarm = {"tool_calls": [call("transfer_to_bob", "handoff", "Alice"),
                            call("ask_alice", "handoff", "Bob"), call("add", "tool", "Alice")],
             "tools_called": ["add"]}  # fmt: skip
    expected = {"expected_tools": ["transfer_to_bob", "ask_alice", "add"]}
    assert correctness(output=swarm, expected_output=expected).value == 1.0
    unmarked = {"tools_called": ["transfer_to_billing_agent", "get_invoice"]}
    assert correctness(output=unmarked, expected_output=BILLING).value == 1.0
    nothing = {"tools_called": [], "tool_calls": []}
    assert correctness(output=nothing, expected_output=BILLING).value == 0.0


def test_groundedness_counts_no_handoff_as_consulting_data_and_says_so():
    """A supervisor that only hands over has looked nothing up: grounded needs a tool."""
    handed = {"tool_calls": [call("transfer_to_bob", "handoff", "Alice")], "tools_called": []}
    score = groundedness(output=handed, metadata={})
    assert score.value == 0.0
    assert score.comment == ("answered without calling any tool (handoffs are not data: "
                             "['transfer_to_bob'])")  # fmt: skip
    assert groundedness(output=ROUTED, metadata={}).value == 1.0


def _openai(name: str, call_id: str, **args: str) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}  # fmt: skip


def desk_messages(route: str, tool: str) -> dict:
    """A supervisor desk's trajectory as the graph adapter stores it (OpenAI format), with
    the tool calls marked as the adapter marks them."""
    answer = "Order A100: $42.00, paid."
    messages = [
        {"role": "user", "content": "How much was the invoice for order A100?"},
        {"role": "assistant", "content": "", "tool_calls": [_openai(f"transfer_to_{route}", "c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": f"Successfully transferred to {route}"},
        {"role": "assistant", "content": "", "tool_calls": [_openai(tool, "c2", order_id="A100")]},
        {"role": "tool", "tool_call_id": "c2", "content": "$42.00, paid"},
        {"role": "assistant", "content": answer},
        {"role": "assistant", "content": "Transferring back to supervisor",
         "tool_calls": [_openai("transfer_back_to_supervisor", "5f0e-0")]},
        {"role": "tool", "tool_call_id": "5f0e-0",
         "content": "Successfully transferred back to supervisor"},
        {"role": "assistant", "content": answer},
    ]  # fmt: skip
    return {"messages": messages, **desk_output(route, tool, answer)}


def test_trajectory_match_without_handoffs_compares_the_handoffs_the_reference_lists():
    """``handoffs: false`` leaves out the handoffs a reference does not list (the library's
    handoff back), and compares the ones it lists. Before, a listed route was dropped from
    the reference but not the result answering it (a reference carries no call ids), so a
    desk that routed right never matched; with no result written, no route was compared."""
    reference = {"trajectory": [
        {"role": "user", "content": "How much was the invoice for order A100?"},
        {"role": "assistant", "tool_calls": [{"name": "transfer_to_billing_agent", "args": {}}]},
        {"role": "tool", "content": "Successfully transferred to billing_agent"},
        {"role": "assistant", "tool_calls": [{"name": "get_invoice",
                                              "args": {"order_id": "A100"}}]},
        {"role": "tool", "content": "$42.00, paid"},
        {"role": "assistant", "content": "Order A100: $42.00, paid."},
        {"role": "assistant", "content": "Order A100: $42.00, paid."},
    ]}  # fmt: skip
    without = trajectory_match(mode="strict", handoffs=False)
    routed = desk_messages("billing_agent", "get_invoice")
    assert without(output=routed, expected_output=reference).value == 1.0
    wrong = desk_messages("shipping_agent", "get_invoice")
    score = without(output=wrong, expected_output=reference)
    assert score.value == 0.0, score.comment
    # with every handoff compared, the reference must hold the library's handoff back too
    assert trajectory_match(mode="strict")(output=routed, expected_output=reference).value == 0.0
    superset = trajectory_match(mode="superset")
    assert superset(output=routed, expected_output=reference).value == 1.0
    assert superset(output=wrong, expected_output=reference).value == 0.0


def case(case_id: str, *tools: str) -> GoldenCase:
    return GoldenCase.model_validate({
        "id": case_id, "input": {"message": "?"},
        "expected_output": {"expected_tools": list(tools), "expected_fields": []},
        "metadata": {"category": "desk", "difficulty": "easy", "tier": "full"}})  # fmt: skip


@pytest.fixture
def desk_graph(monkeypatch):
    """zoo/supervisor_desk's graph, built as the team builds it (no model is called)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    from eval_pipeline_tests.zoo.supervisor_desk.agent import build

    return build()


def test_an_expected_name_the_agent_does_not_offer_is_noted_before_the_run(desk_graph):
    """Read from the graph before it runs: its ToolNodes' tools (handoff tools included,
    in every subgraph) and the supervisor's handoff back."""
    from eval_pipeline.agents.adapters.offered_tools import offered_tools

    offered = offered_tools(desk_graph)
    assert offered == {"get_invoice", "refund_status", "issue_refund", "track_package",
                       "delivery_estimate", "transfer_to_billing_agent",
                       "transfer_to_shipping_agent", "transfer_back_to_supervisor"}  # fmt: skip
    fine = [case("bill", "transfer_to_billing_agent", "get_invoice"),
            case("back", "transfer_back_to_supervisor"),
            case("plain", "track_package")]  # fmt: skip
    assert unknown_expected_tools(fine, offered) == []
    typo = [*fine, case("route-1", "transfer_to_billing", "get_invoice"),
            case("route-2", "transfer_to_billing"), case("agent", "billing_agent")]  # fmt: skip
    [note] = unknown_expected_tools(typo, offered)
    assert note.startswith(
        "expected_tools names what is neither a tool nor a handoff the agent offers, so no "
        "run can call it: 'transfer_to_billing' (case route-1, route-2) (did you mean "
        "'transfer_to_billing_agent'?); 'billing_agent' (case agent)"
    ), note
    assert "it offers delivery_estimate, get_invoice, " in note


def test_a_graph_calling_its_tools_from_its_own_nodes_is_not_second_guessed():
    """No ToolNode (LangGraph's quickstart writes its own tool node): what it offers cannot
    be read, and nothing is noted."""
    from langgraph.graph import START, MessagesState, StateGraph

    from eval_pipeline.agents.adapters.offered_tools import offered_tools

    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": []})
    builder.add_edge(START, "agent")
    assert offered_tools(builder.compile()) is None
    assert unknown_expected_tools([case("any", "whatever")], None) == []
