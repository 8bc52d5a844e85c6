"""Which errors are worth retrying, and how long to wait (provider-agnostic duck typing)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
RETRYABLE_NAMES = {
    "APIConnectionError", "APITimeoutError", "RateLimitError", "InternalServerError",
    "ConnectError", "ConnectTimeout", "ReadTimeout", "ReadError", "RemoteProtocolError",
    "WriteError", "PoolTimeout",
}  # fmt: skip


def status_code(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    if code is None and (response := getattr(exc, "response", None)) is not None:
        code = getattr(response, "status_code", None)
    return code if isinstance(code, int) else None


# Model SDKs retry their own calls (max_retries): what they raise was retried already.
CLIENT_RETRIED = {"openai", "anthropic"}


def retried_by_client(exc: BaseException) -> bool:
    """Raised by a model SDK that retries its own failed calls (OpenAI, Anthropic)."""
    return any(cls.__module__.split(".")[0] in CLIENT_RETRIED for cls in type(exc).__mro__)


def is_retryable(exc: BaseException) -> bool:
    if getattr(exc, "retryable", None) is False:
        return False
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    code = status_code(exc)
    if code is not None:
        return code in RETRYABLE_STATUS
    # by ancestry: langchain-openai re-raises the SDK's errors as subclasses with other
    # names (OpenAITimeoutError is an openai.APITimeoutError)
    return any(cls.__name__ in RETRYABLE_NAMES for cls in type(exc).__mro__)


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's Retry-After (seconds or an HTTP date), if the error carries one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
        except (TypeError, ValueError):
            return None


def backoff_delay(exc: BaseException, attempt: int, base: float, cap: float) -> float:
    """Retry-After when given, else exponential backoff with full jitter."""
    hinted = retry_after_seconds(exc)
    if hinted is not None:
        return min(hinted, cap)
    return random.uniform(0, min(cap, base * 2 ** (attempt - 1)))
