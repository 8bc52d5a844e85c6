"""Count every LangChain model call's tokens into the running item's ledger, and whether a
call that offered tools was answered with a tool call (an endpoint that ignores tools
answers none: the run says so).

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

from eval_pipeline.core.running.agent import current_item


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

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        offered = run_id in self.offered
        self.offered.discard(run_id)
        scope = current_item.get()
        if scope is None:
            return
        default_model = (response.llm_output or {}).get("model_name") or "unknown"
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                model = (getattr(message, "response_metadata", None) or {}).get(
                    "model_name"
                ) or default_model
                if offered:
                    scope.usage.tools_offered(model, bool(getattr(message, "tool_calls", None)))
                usage = getattr(message, "usage_metadata", None)
                if usage:
                    scope.usage.add(model, usage.get("input_tokens", 0),
                                    usage.get("output_tokens", 0))  # fmt: skip


# The default is the one shared handler (it keeps no state of its own): every LangChain
# callback manager picks it up, in every task, without a set() per item.
_HANDLER: ContextVar[ItemUsageHandler | None] = ContextVar(
    "eval_item_usage_handler",
    default=ItemUsageHandler(),  # noqa: B039
)
register_configure_hook(_HANDLER, inheritable=True)
