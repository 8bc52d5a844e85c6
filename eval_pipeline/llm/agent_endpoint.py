"""Where the agent's own model clients send their requests: the one place it is decided.

``ctx.model`` is built from EVAL_LLM_*. An agent that builds its own client
(``init_chat_model("openai:…")``, a module-level ``ChatOpenAI()``, the ``openai`` SDK) reads
its SDK's own variables instead. While a run builds and runs the agent (record, live and
replay), the variables below are set for it, each only where the environment has none,
and unset again afterwards:

1. ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` from ``EVAL_LLM_BASE_URL`` and
   ``EVAL_LLM_API_KEY`` when neither is set: one ``export EVAL_LLM_*`` points ``ctx.model``
   and the agent's own OpenAI-compatible clients at the same endpoint. Set either yourself
   and the agent's clients call what you set (doctor says which);
2. the variables of the project's ``langgraph.json`` ``env`` (its ``.env`` file or mapping);
3. in a replay, a placeholder key for each SDK key still unset (a client built at import
   needs one; nothing is sent).

Values that look like keys are registered with the redactor: no output shows them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from eval_pipeline.core.util.redact import register_secret, register_url, secret_name
from eval_pipeline.llm.model_settings import REPLAY_KEY, LLMSettings

OPENAI_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY")
# Variables an SDK reads its key from when a client is built: ``ChatOpenAI()`` at a
# module's top raises without one, before anything is sent.
SDK_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
NO_KEY = "no-key-configured"  # (an SDK refuses to build a client with none)


def agent_variables(llm: LLMSettings, declared: Mapping[str, str], *, replay: bool,
                    environ: Mapping[str, str]) -> dict[str, str]:  # fmt: skip
    """The variables a run sets for the agent (see the module's docstring), each one the
    environment ``environ`` does not set."""
    found: dict[str, str] = {}
    configured = llm.base_url or llm.api_key
    if not replay and configured and not any(environ.get(n) for n in OPENAI_VARIABLES):
        if llm.base_url:  # (none: OpenAI's own, with EVAL_LLM_API_KEY)
            found["OPENAI_BASE_URL"] = llm.base_url
        found["OPENAI_API_KEY"] = llm.api_key.get_secret_value() if llm.api_key else NO_KEY
    for name, value in declared.items():
        if not environ.get(name) and name not in found:
            found[name] = value
    for name in SDK_KEY_VARIABLES if replay else ():
        if not environ.get(name) and name not in found:
            found[name] = REPLAY_KEY
    return found


@contextlib.contextmanager
def agent_environment(llm: LLMSettings, declared: Mapping[str, str] | None = None, *,
                      replay: bool = False) -> Iterator[dict[str, str]]:  # fmt: skip
    """While the agent is built and run: ``agent_variables`` set in the process (unset
    again after, so a later run in the same process starts from the same environment).
    Nested, the inner one sets nothing the outer one set."""
    variables = agent_variables(llm, declared or {}, replay=replay, environ=os.environ)
    for name, value in variables.items():
        if secret_name(name) or name.endswith(("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")):
            register_secret(value)
        register_url(value)  # a password in OPENAI_BASE_URL, and its Basic header form
        os.environ[name] = value
    try:
        yield variables
    finally:
        for name, value in variables.items():
            if os.environ.get(name) == value:
                del os.environ[name]


@dataclass(frozen=True)
class AgentEndpoint:
    """The endpoint the agent's own OpenAI-compatible clients will call, and why."""

    base_url: str  # (api.openai.com when nothing says otherwise)
    source: str  # which setting gave it
    key: str | None  # the key they will send (None: none; the SDK refuses to start)
    key_source: str

    def describe(self) -> str:
        key = f"key from {self.key_source}" if self.key else "no key (OPENAI_API_KEY unset)"
        return f"{self.base_url} ({self.source}; {key})"


def agent_endpoint(llm: LLMSettings, declared: Mapping[str, str] | None = None,
                   environ: Mapping[str, str] | None = None) -> AgentEndpoint:  # fmt: skip
    """Where a live or recorded run's agent clients go (``agent_variables``, no replay)."""
    environ = os.environ if environ is None else environ
    given = agent_variables(llm, declared or {}, replay=False, environ=environ)

    def origin(name: str) -> tuple[str | None, str]:
        if environ.get(name):
            return environ[name], f"{name} in the environment"
        if name in given and name in (declared or {}):
            return given[name], f"{name} in langgraph.json's env"
        if name in given:
            source = "EVAL_LLM_BASE_URL" if name == "OPENAI_BASE_URL" else "EVAL_LLM_API_KEY"
            return given[name], f"{source}, as {name}"
        return None, ""

    base_url, source = origin("OPENAI_BASE_URL")
    key, key_source = origin("OPENAI_API_KEY")
    return AgentEndpoint(base_url or "https://api.openai.com/v1",
                         source or "OpenAI's default: no OPENAI_BASE_URL",
                         key if key and key != NO_KEY else None, key_source)  # fmt: skip


def endpoint_settings(endpoint: AgentEndpoint, model: str) -> LLMSettings:
    """Settings to probe the agent's endpoint with (llm/endpoint.py's checks)."""
    return LLMSettings.create(model=model, base_url=endpoint.base_url, api_key=endpoint.key)
