"""What an item's error says, and whose failure it is: the agent's, or something else's.

Every failed item gets a kind (for counting: "timeout", "HTTP 503", "recursion limit",
"replay miss", the exception's type…) and a fault, which decides what it does to the
verdict:

- ``agent``: "recursion limit" (LangGraph's GraphRecursionError: the agent looped), the
  agent's own exception (KeyError, ValueError, a tool's ValidationError…). The item scores
  0 and counts against the candidate in the gate: a new prompt that makes the agent loop
  is a regression (exit 1 when it decides the verdict).
- ``infrastructure``: "timeout" (a model call or the item), "HTTP 429" and "HTTP 5xx"
  beyond the retries and every other HTTP error status, a refused or dropped connection,
  "replay miss", "escaped call". The run could not measure the agent on that item: the
  verdict is ERROR (exit 2), never a pass.
- ``configuration``: the case input does not fit the agent (``input_map``), the agent's
  answer is not an output contract. ERROR (exit 2): fix the suite.

An exception says which it is with a ``fault`` attribute; ItemProblems reported while the
item ran (core/running/agent.py) are infrastructure failures whatever the agent raised.
"""

from __future__ import annotations

from typing import Literal

from eval_pipeline.core.running.retry import status_code

Fault = Literal["agent", "infrastructure", "configuration"]
NOT_THE_AGENT: tuple[Fault, ...] = ("infrastructure", "configuration")
FAULTS: tuple[Fault, ...] = ("agent", *NOT_THE_AGENT)

TIMEOUT_NAMES = {"APITimeoutError", "ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout"}
CONNECTION_NAMES = {
    "APIConnectionError", "ConnectError", "ReadError", "WriteError", "RemoteProtocolError",
    "ConnectionError", "ProxyError", "SSLError", "ClientConnectorError",
    "ServerDisconnectedError",
}  # fmt: skip


def error_kind(exc: BaseException) -> str:
    """A short class of failure for counting: "timeout", "HTTP 429", "HTTP 400
    invalid_request_error" (the error type the server named), "recursion limit", or the
    exception's type."""
    if _named(exc, {"GraphRecursionError"}):
        return "recursion limit"
    if isinstance(exc, TimeoutError) or _named(exc, TIMEOUT_NAMES):
        return "timeout"
    code = status_code(exc)
    if code is None:
        return type(exc).__name__
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    named = error.get("type") if isinstance(error, dict) else None
    return f"HTTP {code} {named}" if isinstance(named, str) and named else f"HTTP {code}"


def fault_of(exc: BaseException) -> Fault:
    """Whose failure ``exc`` is (the table above)."""
    declared = getattr(exc, "fault", None)
    for fault in FAULTS:  # an error that says whose failure it is
        if declared == fault:
            return fault
    if _named(exc, {"GraphRecursionError"}):
        return "agent"
    if isinstance(exc, TimeoutError | ConnectionError) or _named(
        exc, TIMEOUT_NAMES | CONNECTION_NAMES
    ):
        return "infrastructure"
    if status_code(exc) is not None:
        return "infrastructure"
    return "agent"


def _named(exc: BaseException, names: set[str]) -> bool:
    """By ancestry: langchain-openai re-raises the SDK's errors as subclasses with other
    names (OpenAITimeoutError is an openai.APITimeoutError)."""
    return any(cls.__name__ in names for cls in type(exc).__mro__)
