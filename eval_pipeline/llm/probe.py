"""`doctor`'s probe of a model server: two tiny calls that show what an evaluation needs.

1. One tool offered, a question that needs it, a small answer cap: does the answer carry
   ``tool_calls`` and ``usage``, and did the server keep to the cap?
2. That tool call answered (an assistant turn with tool calls, then a tool message): is
   the conversation accepted?

Each finding says which setting fixes it (docs/model-servers.md). The model server's
identity (``owned_by`` of its models, its ``server`` header) is reported as found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from eval_pipeline.core.util.redact import redact
from eval_pipeline.llm.endpoint import busy, check_timeout_s, client
from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.model_settings import LLMSettings

PROBE_CAP = 64  # answer tokens asked for; a server that keeps to it stays below ~2× this


@tool
def search(query: str) -> str:
    """Search the document collection; returns matching passages."""
    return "Halvard Systems is headquartered in Oslo."


# A question a tool-calling model answers with a search (so does the offline model).
QUESTION = "In which country is Halvard Systems headquartered? Use the search tool."


@dataclass
class ProbeReport:
    identity: str = ""
    problems: list[tuple[str, str]] = field(default_factory=list)  # (what, how to fix)
    facts: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def server_identity(settings: LLMSettings) -> str:
    """``owned_by`` of the listed models and the HTTP ``server`` header, as answered."""
    raw = client(settings, check_timeout_s()).models.with_raw_response.list()
    owners = sorted({m.owned_by for m in raw.parse().data if getattr(m, "owned_by", None)})
    parts = [
        f"models owned by {', '.join(owners)}" if owners else "",
        f"server {raw.headers.get('server')}" if raw.headers.get("server") else "",
    ]
    return "; ".join(p for p in parts if p) or "no identity given"


def probe(settings: LLMSettings) -> ProbeReport:
    """Two small calls as an evaluation makes them (the run's settings; a small cap)."""
    report = ProbeReport()
    try:
        report.identity = server_identity(settings)
    except Exception as exc:  # identity is a courtesy; the calls below tell what matters
        report.facts.append(redact(busy(exc) or f"no model listing ({type(exc).__name__})"))
    probe_settings = settings.model_copy(
        update={
            "max_tokens": PROBE_CAP,
            "max_retries": 0,
            "timeout_s": check_timeout_s(),
            "temperature": settings.temperature or 0.0,
        }
    )
    model = create_chat_model(probe_settings).bind_tools([search])
    question = [
        SystemMessage("You answer questions with the search tool."),
        HumanMessage(QUESTION),
    ]
    try:
        first = model.invoke(question)
    except Exception as exc:
        report.problems.append(_failed("a tool-calling request", exc, settings))
        return report
    _check_answer(first, settings, report)
    call = (
        first.tool_calls or [{"name": "search", "args": {"query": "Halvard"}, "id": "call_probe"}]
    )[0]
    turn = AIMessage(content="", tool_calls=[call])
    try:
        result = ToolMessage(search.invoke("Halvard"), tool_call_id=call["id"])
        model.invoke([*question, turn, result])
        report.facts.append("a tool result is accepted after an assistant turn with tool calls")
    except Exception as exc:
        report.problems.append(_failed("a tool result after the tool call", exc, settings))
    return report


def _check_answer(answer: Any, settings: LLMSettings, report: ProbeReport) -> None:
    usage = answer.usage_metadata or {}
    if answer.tool_calls:
        report.facts.append(f"calls tools (tool_choice {settings.tool_choice or 'not sent'})")
    else:
        fix = (
            "set EVAL_LLM_TOOL_CHOICE=auto (llama.cpp uses tools only when asked; "
            "EVAL_LLM_COMPAT=llama.cpp sets it)"
            if not settings.tool_choice
            else "use a model that calls tools, or check the server's tool-calling setup"
        )
        report.problems.append(
            (
                "offered a tool for a question that needs it, the server "
                "answered without a tool call: agents will call no tools",
                fix,
            )
        )
    if not usage:
        report.problems.append(
            (
                "the answer has no usage: tokens and cost will read 0",
                "check the server's OpenAI compatibility (usage in answers)",
            )
        )
    elif usage.get("output_tokens", 0) > 2 * PROBE_CAP:
        field_ = settings.max_tokens_field
        fix = (
            "set EVAL_LLM_MAX_TOKENS_FIELD=max_tokens"
            if field_ != "max_tokens"
            else "this server ignores the cap in this mode: keep answers short by prompt"
        )
        report.problems.append(
            (
                f"asked for at most {PROBE_CAP} tokens as {field_}, it "
                f"answered {usage['output_tokens']}: answers may run on",
                fix,
            )
        )


# The part of a validation error that names an assistant turn's null content (llama.cpp
# lists one error per message type it tried; this is the one that matters).
NULL_TURN = re.compile(r"[^\n]*Assistant\w*', 'content'\)[^\n]*'input': None[^\n]*")


def _failed(what: str, exc: Exception, settings: LLMSettings) -> tuple[str, str]:
    full = redact(f"{type(exc).__name__}: {exc}")
    if hint := busy(exc):
        return (f"{what}: {hint}", "wait for the server, or raise EVAL_LLM_CHECK_TIMEOUT_S")
    if (null_turn := NULL_TURN.search(full)) and settings.tool_turn_content != "empty":
        return (
            f"{what} was refused: {null_turn.group().strip()[:200]}",
            "set EVAL_LLM_TOOL_TURN_CONTENT=empty (the server rejects null content next "
            "to tool calls; EVAL_LLM_COMPAT=llama.cpp sets it)",
        )
    return (f"{what} failed: {full[:300]}", "see the error; docs/model-servers.md")
