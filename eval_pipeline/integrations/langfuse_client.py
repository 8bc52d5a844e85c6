"""Langfuse connection settings and the SDK client built from them.

Keys come from the environment (``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY``, the host
in ``LANGFUSE_BASE_URL`` or the SDK's older ``LANGFUSE_HOST``) or from Dagster
``EnvVar``-backed resources, which read the same variables (``BASE_URL_VARS``). The secret
key is registered for redaction as soon as it is read, so it can never reach logs or
metadata. Evaluation traces go to their own Langfuse environment (``EVAL_LANGFUSE_
ENVIRONMENT``, default ``sdk-experiment`` as the SDK's own experiments), never into
``default``: Langfuse's tables hide ``sdk-experiment`` by default; its Home dashboard
hides only its own ``langfuse-*`` environments, a prefix no SDK may use (``ENVIRONMENT``
below; docs/langfuse.md, Environments).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx
from langfuse import Langfuse
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.util import tls
from eval_pipeline.core.util.redact import redact_strings, register_secret

DEFAULT_BASE_URL = "https://cloud.langfuse.com"
# The host's variables, first found wins: the SDK reads LANGFUSE_BASE_URL, then the older
# LANGFUSE_HOST (langfuse/_client/client.py), and so do the CLI and Dagster here.
BASE_URL_VARS = ("LANGFUSE_BASE_URL", "LANGFUSE_HOST")
ENVIRONMENT_VAR = "EVAL_LANGFUSE_ENVIRONMENT"
DEFAULT_ENVIRONMENT = "sdk-experiment"  # langfuse/_client/constants.py, the SDK's experiments
# What the SDK accepts as an environment (propagate_attributes' docstring): lowercase
# letters, digits, '-' and '_', at most 40 characters, not starting with "langfuse". The
# server enforces the prefix: its public ingestion strips every leading "langfuse[-_]"
# from an environment (PublicEnvironmentName, packages/shared/src/server/ingestion/
# types.ts, v4.16.0): "langfuse-eval" lands in "eval". Only Langfuse's own traffic (its
# LLM-as-a-judge, prompt experiments) keeps "langfuse-*", the environments its Home
# dashboard leaves out by default (web/src/hooks/useEnvironmentFilter.tsx).
ENVIRONMENT = re.compile(r"^[a-z0-9_-]{1,40}$")
RESERVED_PREFIX = "langfuse"
# Server releases this version was tested against (docs/langfuse.md): the v3 line serves
# v1 observations, the v4 line v2 observations; both take scores through /ingestion.
TESTED_VERSIONS = ("3.225.4", "4.16.0")
SUPPORTED_MAJORS = (3, 4)


@dataclass(frozen=True)
class LangfuseSettings:
    public_key: str
    secret_key: str
    base_url: str = DEFAULT_BASE_URL
    timeout_s: int = 10
    environment: str = DEFAULT_ENVIRONMENT

    def __post_init__(self) -> None:
        register_secret(self.secret_key)
        if problem := environment_problem(self.environment):
            raise ConfigurationError(
                f"{ENVIRONMENT_VAR}={self.environment!r}: {problem}; name another, or unset "
                f"it for {DEFAULT_ENVIRONMENT!r} (the environment of Langfuse's own SDK "
                "experiments, docs/langfuse.md#environments)"
            )

    def __repr__(self) -> str:  # never show the secret, even in a traceback
        return f"LangfuseSettings(public_key={self.public_key!r}, base_url={self.base_url!r})"

    @classmethod
    def from_values(
        cls, public_key: str | None, secret_key: str | None, base_url: str | None = None,
        environment: str | None = None,
    ) -> LangfuseSettings | None:  # fmt: skip
        """Settings when both keys are given, None when neither is (= use the local
        implementations); one without the other is refused (Langfuse was silently off)."""
        if bool(public_key) != bool(secret_key):
            given, missing = (("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY") if public_key
                              else ("LANGFUSE_SECRET_KEY", "LANGFUSE_PUBLIC_KEY"))  # fmt: skip
            raise ConfigurationError(
                f"{given} is set but {missing} is not: Langfuse needs both keys; set "
                f"{missing}, or unset {given} to run without Langfuse"
            )
        if not (public_key and secret_key):
            return None
        return cls(public_key, secret_key, (base_url or DEFAULT_BASE_URL).rstrip("/"),
                   environment=environment or DEFAULT_ENVIRONMENT)  # fmt: skip

    @classmethod
    def from_env(cls) -> LangfuseSettings | None:
        return cls.from_values(
            os.environ.get("LANGFUSE_PUBLIC_KEY"),
            os.environ.get("LANGFUSE_SECRET_KEY"),
            os.environ.get(base_url_var()),
            os.environ.get(ENVIRONMENT_VAR),
        )

    def client(self) -> Langfuse:
        """The SDK client. The SDK shares one set of resources per public key in a process,
        made by the first client: so every client here has tracing on (one created with it
        off would silently switch tracing off for the whole process).

        Its spans go through a tracer provider of our own, not the process-wide one: the
        evaluation's spans reach Langfuse only (not exporters the user's code registered),
        and no other code's spans reach Langfuse through us."""
        return Langfuse(
            public_key=self.public_key,
            secret_key=self.secret_key,
            base_url=self.base_url,
            timeout=self.timeout_s,
            environment=self.environment,
            tracer_provider=_tracer_provider(self),
            mask=_masked,
        )

    def http(self, timeout_s: float | None = None) -> httpx.Client:
        """Our own calls to the public API, for what SDK 5 does not offer (score batches
        through /ingestion, v1 observations of v3 servers)."""
        return httpx.Client(base_url=self.base_url, auth=(self.public_key, self.secret_key),
                            timeout=timeout_s or self.timeout_s,
                            verify=tls.shared_context())  # fmt: skip

    def server_version(self) -> str:
        """The server's version from GET /api/public/health (no auth needed)."""
        response = httpx.get(f"{self.base_url}/api/public/health", timeout=self.timeout_s,
                             verify=tls.shared_context())  # fmt: skip
        response.raise_for_status()
        return str(response.json().get("version") or "unknown")


def environment_problem(name: str) -> str | None:
    """Why Langfuse would not keep evaluation traffic in the environment ``name`` (None: it
    would)."""
    if not ENVIRONMENT.match(name):
        return "a Langfuse environment is lowercase letters, digits, '-' and '_' (at most 40)"
    if name.startswith(RESERVED_PREFIX):
        landed = re.sub(r"^(?:langfuse[-_]?)+", "", name) or "default"
        return (f"Langfuse reserves the prefix {RESERVED_PREFIX!r} for its own traffic: its "
                f"server strips it from what SDKs send (this would land in {landed!r}, "
                "where the Home dashboard counts it), and the SDK refuses it")  # fmt: skip
    return None


def base_url_var() -> str:
    """The variable that names the host: the first of BASE_URL_VARS that is set."""
    return next((v for v in BASE_URL_VARS if os.environ.get(v)), BASE_URL_VARS[0])


def major_version(version: str) -> int:
    """The major of a server version ("v4.16.0" → 4); ValueError when it has none."""
    return int(version.lstrip("v").split(".")[0])


def version_status(version: str) -> tuple[bool, str | None]:
    """Whether eval-pipeline can work with this server version, and what to say about it."""
    tested = ", ".join(TESTED_VERSIONS)
    try:
        major = major_version(version)
    except ValueError:
        return True, f"its version ({version!r}) could not be read; tested: {tested}"
    if major < SUPPORTED_MAJORS[0]:
        return False, (f"Langfuse {version} is older than v3 (no OpenTelemetry ingestion, no "
                       f"score batches): upgrade the server; tested: {tested}")  # fmt: skip
    if major > SUPPORTED_MAJORS[-1]:
        return True, (
            f"Langfuse {version} is newer than the releases eval-pipeline was "
            f"tested against ({tested}): it may work; report what does not"
        )
    return True, None


# While an item's root observation starts, the span id it must get (``item_root_span_id``);
# while the item runs, what every span of it carries as the experiment's description.
_ROOT_SPAN: ContextVar[int | None] = ContextVar("eval_root_span", default=None)
_DESCRIPTION: ContextVar[str | None] = ContextVar("eval_experiment_description", default=None)
DESCRIPTION = "langfuse.experiment.description"  # langfuse/_client/attributes.py


class _ItemIds(RandomIdGenerator):
    """Random ids, except an item's root span: its id derives from (run, case, repeat), so
    its scores can name it (``observationId``) without storing it."""

    def generate_span_id(self) -> int:
        wanted = _ROOT_SPAN.get()
        if wanted is None:
            return super().generate_span_id()
        _ROOT_SPAN.set(None)
        return wanted


class _Described(SpanProcessor):
    """The experiment's description on every span of an item: Langfuse takes any of the
    experiment's events' (an ``any()`` over them), and the SDK carries it to no child."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if (text := _DESCRIPTION.get()) is not None:
            span.set_attribute(DESCRIPTION, text)


@cache
def _tracer_provider(settings: LangfuseSettings) -> TracerProvider:
    provider = TracerProvider(id_generator=_ItemIds())
    provider.add_span_processor(_Described())
    return provider


@contextmanager
def item_spans(run_id: str, item_id: str, repeat: int, description: str) -> Iterator[None]:
    """Around an item's root observation (started first inside): its span id is
    ``item_root_span_id``, and every span of the item carries ``description``."""
    root = _ROOT_SPAN.set(int(item_root_span_id(run_id, item_id, repeat), 16))
    described = _DESCRIPTION.set(description)
    try:
        yield
    finally:
        _ROOT_SPAN.reset(root)
        _DESCRIPTION.reset(described)


def item_root_span_id(run_id: str, item_id: str, repeat: int) -> str:
    """The root observation of one evaluated item's trace (16 hex characters, never 0)."""
    digest = hashlib.sha256(f"eval-pipeline-root:{run_id}:{item_id}:{repeat}".encode())
    return f"{int(digest.hexdigest()[:16], 16) or 1:016x}"


class LangfuseService:
    """Base of the classes that read or write one Langfuse project: the SDK client, and
    the settings for the calls the SDK does not make."""

    def __init__(self, settings: LangfuseSettings, *, timeout_s: float | None = None):
        self.settings = settings
        self.timeout_s = timeout_s or settings.timeout_s
        self.client = settings.client()

    @property
    def description(self) -> str:
        return f"langfuse ({self.settings.base_url})"


def describe_error(exc: Exception) -> str:
    """A short, secret-free reason: the HTTP status (with what to do about a refusal), or
    the exception type and message."""
    status = getattr(exc, "status_code", None)
    return describe_status(status) if status else f"{type(exc).__name__}: {exc}"


def describe_status(status: int, detail: str = "") -> str:
    """``HTTP <status>``, and for 401/403 what the team has to change: nothing sent then
    can arrive until it does, so it is said as a configuration problem, not an outage."""
    said = f"HTTP {status}" + (f": {detail}" if detail else "")
    if status == 401:
        return (f"{said} (Langfuse refused the keys: check LANGFUSE_PUBLIC_KEY and "
                f"LANGFUSE_SECRET_KEY, and that {base_url_var()} names their project's host, "
                "e.g. https://us.cloud.langfuse.com for the US cloud)")  # fmt: skip
    if status == 403:
        return (f"{said} (Langfuse refused access: ingestion suspended by a usage limit, "
                "or the keys lack access to this project; see the organisation's billing "
                "and the keys' project)")  # fmt: skip
    return said


def item_trace_id(run_id: str, item_id: str, repeat: int) -> str:
    """The trace of one evaluated item (a case and repeat of a run): the same id whoever
    computes it (the tracing, the score write-back, the experiment's links)."""
    return Langfuse.create_trace_id(seed=f"{run_id}:{item_id}:{repeat}")


def _masked(*, data: Any, **_: Any) -> Any:
    """What a span's input, output and metadata carry, secrets masked (a token a tool got
    back and quoted, a key a server echoed): core/util/redact.py."""
    return redact_strings(data)
