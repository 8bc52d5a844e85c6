"""Count every LangChain model call's tokens into the running item's ledger, and whether a
call that offered tools was answered with a tool call (an endpoint that ignores tools
answers none: the run says so) and whether its arguments parsed (a model that writes
broken JSON is named as such, not taken for an endpoint that ignores tools).

It also sees answers that are not completions, whoever's client got them: an HTTP 200
whose body is an HTML page (a login wall, a captive portal), an error object, or no
choices at all (``malformed``). That is the provider's (or a proxy's) failure, not the
agent's: the item is reported failed with kind "invalid answer (…)", an infrastructure
failure (the run's verdict ERROR, exit 2), whatever the agent did with the error.

One callback handler is registered once as a LangChain configure hook, so it is attached
to every chat model call in the process, the user's own models included, without anyone
passing callbacks. It adds a call's usage to the ledger of the item that is running
(``core.running.agent.current_item``); outside an item it does nothing. Because the ledger
belongs to the item, not to its result, the tokens of an attempt that failed half-way are
counted too.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook

from eval_pipeline.core.running.agent import ItemProblem, current_item


class ItemUsageHandler(BaseCallbackHandler):
    run_inline = True  # no executor hop: it only adds numbers
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_custom_event = True

    def __init__(self) -> None:
        self.offered: set[UUID] = set()  # calls in flight that offered tools

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID,
                            **kwargs: Any) -> None:  # fmt: skip
        if current_item.get() is not None and (kwargs.get("invocation_params") or {}).get("tools"):
            self.offered.add(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.offered.discard(run_id)
        scope = current_item.get()
        if scope is not None and (what := malformed(error)) is not None:
            scope.report(ItemProblem(f"invalid answer ({what})", _invalid(what, str(error))))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        offered = run_id in self.offered
        self.offered.discard(run_id)
        scope = current_item.get()
        if scope is None:
            return
        if not response.generations or not all(response.generations):
            scope.report(ItemProblem("invalid answer (no choices)", _invalid(
                "no choices", "the answer held no choices")))  # fmt: skip
        default_model = (response.llm_output or {}).get("model_name") or "unknown"
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                model = (getattr(message, "response_metadata", None) or {}).get(
                    "model_name"
                ) or default_model
                if offered:
                    invalid = bool(getattr(message, "invalid_tool_calls", None))
                    called = invalid or bool(getattr(message, "tool_calls", None))
                    scope.usage.tools_offered(model, called, invalid)
                usage = getattr(message, "usage_metadata", None)
                if usage:
                    scope.usage.add(model, usage.get("input_tokens", 0),
                                    usage.get("output_tokens", 0))  # fmt: skip


def malformed(error: BaseException) -> str | None:
    """What kind of non-completion a model call's error says it got, or None: langchain-
    openai raises ValueError("Unexpected response type …, got str: '<html…'") for a body
    that is not JSON, and ValueError(the error object) for a 200 carrying ``error``."""
    if not isinstance(error, ValueError) or not error.args:
        return None
    first = error.args[0]
    if isinstance(first, dict) and ("message" in first or "code" in first):
        return "error body"
    if isinstance(first, str) and first.startswith("Unexpected response type"):
        return "HTML" if "<html" in first.lower() or "<!doctype" in first.lower() else "not JSON"
    return None


def _invalid(what: str, detail: str) -> str:
    return (f"the model endpoint answered HTTP 200 with {what} instead of a completion "
            f"({detail[:160]}): a proxy, a gateway or the provider failed, not the agent; "
            "check EVAL_LLM_BASE_URL and retry")  # fmt: skip


# The default is the one shared handler (it keeps no state of its own): every LangChain
# callback manager picks it up, in every task, without a set() per item.
_HANDLER: ContextVar[ItemUsageHandler | None] = ContextVar(
    "eval_item_usage_handler",
    default=ItemUsageHandler(),  # noqa: B039
)
register_configure_hook(_HANDLER, inheritable=True)
