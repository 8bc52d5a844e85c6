"""The support desk's model and project (zoo/supervisor_desk): a scripted chat model the
local OpenAI-compatible server answers with, and the team's files around the agent.

``DeskModel`` plays each role from the tools it is offered, as a real model does from its
prompt and tools: offered handoff tools (``transfer_to_*``), it is the supervisor (route
billing questions to billing_agent, the rest to shipping_agent, and once an agent has
answered, repeat its answer); offered ``get_invoice`` it is the billing agent, offered
``track_package`` the shipping agent (call the tool for the order asked about, then answer
from its result; a refund asked for with "please refund" goes to ``issue_refund``, which
waits for a person's approval). Its tool-call ids are random, as OpenAI's are. The
cases are written both ways: the data tools only, and the routes too (``route-…``: the
handoffs in ``expected_tools``, as langgraph-supervisor names them). A
supervisor prompt that does not say to hand questions over makes it answer itself, from
nothing: the worse version.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml
from langchain_core.messages import AIMessage, ToolMessage

from eval_pipeline_tests.teams import ZOO, Case, ScriptedModel, calls, question, results, system

BILLING = re.compile(r"invoice|refund|charge|bill", re.I)
ORDER = re.compile(r"\bA\d{3}\b", re.I)
WORSE_PROMPT = "You are the supervisor of a support desk. Answer every question yourself."

CASES = [
    Case("bill-a100", "How much was the invoice for order A100?", ["get_invoice"], ["$42.00"]),
    Case("bill-a200", "Is there a charge still due on A200?", ["get_invoice"], ["$17.50"]),
    Case("refund-a100", "Did you refund order A100?", ["refund_status"], ["no refund"]),
    Case("ship-a100", "Where is my package for order A100?", ["track_package"], ["delivered"]),
    Case("ship-a200", "When will order A200 arrive?", ["track_package"], ["28 November"]),
    Case("ship-a300", "Track order A300 please", ["track_package"], ["no such order"]),
    # The refund tool waits for a person (interrupt()): approved, declined, and not answered.
    Case(
        "refund-a200",
        "Please refund order A200",
        ["issue_refund"],
        ["$17.50 issued"],
        resume=[{"approved": True}],
    ),
    Case(
        "refund-denied",
        "Please refund order A100",
        ["issue_refund"],
        ["declined"],
        resume={"issue_refund": [{"approved": False}]},
    ),
    Case("refund-waits", "Please refund order A200 today", ["issue_refund"], [], paused=True),
    # The same desk with its routes listed, as teams write them after langgraph-supervisor's
    # README: the handoff tools by name, the library's own handoff back included once.
    Case("route-bill-a200", "What is the bill for order A200?",
         ["transfer_to_billing_agent", "get_invoice"], ["$17.50"]),
    Case("route-ship-a100", "Has order A100 been delivered yet?",
         ["transfer_to_shipping_agent", "track_package"], ["delivered"]),
    Case("route-refund-a200", "Was order A200 refunded?",
         ["transfer_to_billing_agent", "refund_status", "transfer_back_to_supervisor"],
         ["no refund"]),
]  # fmt: skip


class DeskModel(ScriptedModel):
    model_name: str = "desk-model"

    def reply(self, messages: list, tools: set[str]) -> AIMessage:
        asked = question(messages)
        found = ORDER.search(asked)
        order = found[0].upper() if found else "A100"
        done = [m for m in messages if isinstance(m, ToolMessage)]
        if any(t.startswith("transfer_to_") for t in tools):  # the supervisor
            if any(str(m.content).startswith("Successfully transferred back") for m in done):
                answers = [m for m in messages if isinstance(m, AIMessage) and m.content
                           and not str(m.content).startswith("Transferring")]  # fmt: skip
                return AIMessage(content=str(answers[-1].content))
            if "hand" not in system(messages).lower():
                return AIMessage(content="I'm sure it is all fine.")
            target = "billing_agent" if BILLING.search(asked) else "shipping_agent"
            return calls((f"transfer_to_{target}", {}))
        own = results(messages, tools)
        if own:
            return AIMessage(content=f"Order {order}: {own[-1].content}.")
        if "get_invoice" in tools:
            name = ("issue_refund" if asked.lower().startswith("please refund") else
                    "refund_status" if "refund" in asked.lower() else "get_invoice")  # fmt: skip
            return calls((name, {"order_id": order}))
        return calls(("track_package", {"order_id": order}))


def write_desk_project(root: Path) -> None:
    """The team's repository: the desk package as zoo/supervisor_desk has it, its cases
    and one suite (the prompt constant is the agent's own: no prompt registry)."""
    shutil.copytree(ZOO / "supervisor_desk", root / "desk")
    (root / "evals" / "desk").mkdir(parents=True)
    cases = [case.as_dict() for case in CASES]
    (root / "evals" / "desk" / "cases.yaml").write_text(yaml.safe_dump({"cases": cases}))
    suite = {"agent": "desk.agent:build", "dataset": "evals/desk",
             "evaluators": ["correctness", "completeness"],
             "thresholds": {"primary_metric": "correctness",
                            "min_mean": {"correctness": 0.8, "completeness": 0.8}}}  # fmt: skip
    (root / "eval-pipeline.yaml").write_text(yaml.safe_dump({"suites": {"desk": suite}}))
