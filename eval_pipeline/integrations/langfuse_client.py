"""Langfuse connection settings and the SDK client built from them.

Keys come from the environment (``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY``,
``LANGFUSE_BASE_URL``) or from Dagster ``EnvVar``-backed resources. The secret key is
registered for redaction as soon as it is read, so it can never reach logs or metadata.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

from langfuse import Langfuse
from opentelemetry.sdk.trace import TracerProvider

from eval_pipeline.core.redact import register_secret

DEFAULT_BASE_URL = "https://cloud.langfuse.com"


@dataclass(frozen=True)
class LangfuseSettings:
    public_key: str
    secret_key: str
    base_url: str = DEFAULT_BASE_URL
    timeout_s: int = 10

    def __post_init__(self) -> None:
        register_secret(self.secret_key)

    def __repr__(self) -> str:  # never show the secret, even in a traceback
        return f"LangfuseSettings(public_key={self.public_key!r}, base_url={self.base_url!r})"

    @classmethod
    def from_values(
        cls, public_key: str | None, secret_key: str | None, base_url: str | None = None
    ) -> LangfuseSettings | None:
        """Settings when both keys are given, else None (= use the local implementations)."""
        if not (public_key and secret_key):
            return None
        return cls(public_key, secret_key, (base_url or DEFAULT_BASE_URL).rstrip("/"))

    @classmethod
    def from_env(cls) -> LangfuseSettings | None:
        return cls.from_values(
            os.environ.get("LANGFUSE_PUBLIC_KEY"),
            os.environ.get("LANGFUSE_SECRET_KEY"),
            os.environ.get("LANGFUSE_BASE_URL") or os.environ.get("LANGFUSE_HOST"),
        )

    def client(self, *, tracing_enabled: bool = True) -> Langfuse:
        """The SDK client. Note the SDK shares HTTP resources per public key in a process.

        Its spans go through a tracer provider of our own, not the process-wide one: the
        evaluation's spans reach Langfuse only (not exporters the user's code registered),
        and no other code's spans reach Langfuse through us."""
        return Langfuse(
            public_key=self.public_key,
            secret_key=self.secret_key,
            base_url=self.base_url,
            timeout=self.timeout_s,
            tracing_enabled=tracing_enabled,
            tracer_provider=_tracer_provider(self) if tracing_enabled else None,
        )


@cache
def _tracer_provider(settings: LangfuseSettings) -> TracerProvider:
    return TracerProvider()


class LangfuseService:
    """Base of the classes that read or write through one SDK client."""

    def __init__(self, client: Langfuse, *, base_url: str = "", timeout_s: int = 10):
        self.client = client
        self.base_url = base_url
        self.timeout_s = timeout_s

    @property
    def description(self) -> str:
        return f"langfuse ({self.base_url})" if self.base_url else "langfuse"


def describe_error(exc: Exception) -> str:
    """A short, secret-free reason: the HTTP status, or the exception type and message."""
    status = getattr(exc, "status_code", None)
    return f"HTTP {status}" if status else f"{type(exc).__name__}: {exc}"
