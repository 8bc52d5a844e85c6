"""The support desk's model and project (zoo/supervisor_desk): a scripted chat model the
local OpenAI-compatible server answers with, and the team's files around the agent.

``DeskModel`` plays each role from the tools it is offered, as a real model does from its
prompt and tools: offered handoff tools (``transfer_to_*``), it is the supervisor (route
billing questions to billing_agent, the rest to shipping_agent, and once an agent has
answered, repeat its answer); offered ``get_invoice`` it is the billing agent, offered
``track_package`` the shipping agent (call the tool for the order asked about, then answer
from its result). Its tool-call ids are random, as OpenAI's are. A supervisor prompt that
does not say to hand questions over makes it answer itself, from nothing: the worse
version.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import yaml
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

ZOO = Path(__file__).parent / "zoo"
BILLING = re.compile(r"invoice|refund|charge|bill", re.I)
ORDER = re.compile(r"\bA\d{3}\b", re.I)
WORSE_PROMPT = "You are the supervisor of a support desk. Answer every question yourself."

CASES = [
    ("bill-a100", "How much was the invoice for order A100?", ["get_invoice"], ["$42.00"]),
    ("bill-a200", "Is there a charge still due on A200?", ["get_invoice"], ["$17.50"]),
    ("refund-a100", "Did you refund order A100?", ["refund_status"], ["no refund"]),
    ("ship-a100", "Where is my package for order A100?", ["track_package"], ["delivered"]),
    ("ship-a200", "When will order A200 arrive?", ["track_package"], ["28 November"]),
    ("ship-a300", "Track order A300 please", ["track_package"], ["no such order"]),
]


class DeskModel(BaseChatModel):
    model_name: str = "desk-model"

    @property
    def _llm_type(self) -> str:
        return "scripted-desk"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        tools = {t["function"]["name"] for t in kwargs.get("tools") or []}
        reply = self.reply(messages, tools)
        reply.usage_metadata = {"input_tokens": 20 * len(messages), "output_tokens": 12,
                                "total_tokens": 20 * len(messages) + 12}  # fmt: skip
        reply.response_metadata = {"model_name": self.model_name}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @staticmethod
    def reply(messages: list, tools: set[str]) -> AIMessage:
        question = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
        found = ORDER.search(question)
        order = found[0].upper() if found else "A100"
        system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        results = [m for m in messages if isinstance(m, ToolMessage)]

        def call(name: str, **args: Any) -> AIMessage:
            return AIMessage(
                content="",
                tool_calls=[{"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:24]}"}],
            )

        if any(t.startswith("transfer_to_") for t in tools):  # the supervisor
            if any(str(m.content).startswith("Successfully transferred back") for m in results):
                answers = [m for m in messages if isinstance(m, AIMessage) and m.content
                           and not str(m.content).startswith("Transferring")]  # fmt: skip
                return AIMessage(content=str(answers[-1].content))
            if "hand" not in system.lower():
                return AIMessage(content="I'm sure it is all fine.")
            target = "billing_agent" if BILLING.search(question) else "shipping_agent"
            return call(f"transfer_to_{target}")
        asked = {c["id"] for m in messages if isinstance(m, AIMessage)
                 for c in m.tool_calls if c["name"] in tools}  # fmt: skip
        own = [m for m in results if m.tool_call_id in asked]  # (no name over the wire)
        if own:
            return AIMessage(content=f"Order {order}: {own[-1].content}.")
        if "get_invoice" in tools:
            return call(
                "refund_status" if "refund" in question.lower() else "get_invoice", order_id=order
            )
        return call("track_package", order_id=order)


def write_desk_project(root: Path) -> None:
    """The team's repository: the desk package as zoo/supervisor_desk has it, its cases
    and one suite (the prompt constant is the agent's own: no prompt registry)."""
    shutil.copytree(ZOO / "supervisor_desk", root / "desk")
    (root / "evals" / "desk").mkdir(parents=True)
    cases = [{"id": cid, "input": {"message": question},
              "expected_output": {"expected_tools": tools, "expected_fields": facts},
              "metadata": {"category": cid.split("-")[0], "difficulty": "easy", "tier": "full"}}
             for cid, question, tools, facts in CASES]  # fmt: skip
    (root / "evals" / "desk" / "cases.yaml").write_text(yaml.safe_dump({"cases": cases}))
    suite = {"agent": "desk.agent:build", "dataset": "evals/desk",
             "evaluators": ["correctness", "completeness"],
             "thresholds": {"primary_metric": "correctness",
                            "min_mean": {"correctness": 0.8, "completeness": 0.8}}}  # fmt: skip
    (root / "eval-pipeline.yaml").write_text(yaml.safe_dump({"suites": {"desk": suite}}))
