"""An agent deployed as a service: POST the case input as JSON, take the JSON answer.

The request body is the case input. Headers say which item it is and which prompt version
is under test (``X-Eval-Case-Id``, ``X-Eval-Repeat``, ``X-Eval-Seed``, ``X-Eval-Prompt``,
``X-Eval-Prompt-Version``), plus the suite's own ``headers`` (``${VAR}`` is read from the
environment and kept out of every log). The answer must be a JSON object: the output
contract. If it carries ``usage: {model, input_tokens, output_tokens}``, those tokens are
counted. Timeouts, retries and error recording are the runner's, as for model calls. A
conversation case is POSTed once per customer turn (agents/adapters/answers.py: the
message, the history so far, the turn, a conversation id, also in
``X-Eval-Conversation-Id``); each answer is one turn's reply.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field, field_validator

from eval_pipeline.agents.adapters.answers import AgentOutputError, TurnSession, output_of
from eval_pipeline.agents.adapters.kinds import AgentKind, Build, KindConfig, Loading, register
from eval_pipeline.agents.context import AgentContext
from eval_pipeline.core.running.agent import Agent, AgentResult, current_item
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.suites.conversation import Customer, conversation_spec, converse
from eval_pipeline.core.util import tls
from eval_pipeline.core.util.redact import register_secret

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``${VAR}`` in a header value from the environment; the values become secrets."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise KeyError(f"header needs the environment variable {name}, which is not set")
        register_secret(os.environ[name])
        return os.environ[name]

    return {k: _VAR.sub(value, v) for k, v in headers.items()}


class HttpAgent:
    def __init__(self, url: str, ctx: AgentContext, *, headers: Mapping[str, str] | None = None,
                 timeout_s: float = 60.0, customer: Customer | None = None,
                 done_field: str | None = None):  # fmt: skip
        self.url, self.ctx, self.timeout_s = url, ctx, timeout_s
        self.headers = expand_headers(headers or {})
        self.customer, self.done_field = customer, done_field
        self._client: httpx.AsyncClient | None = None  # made in the run's event loop

    @property
    def service_url(self) -> str:
        """The service under test: its traffic is never recorded nor blocked."""
        return self.url

    @property
    def prompt_read(self) -> bool:
        return True  # the service is told the prompt version; whether it uses it is its own

    async def run(
        self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()
    ) -> AgentResult:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout_s, verify=tls.shared_context())
        scope = current_item.get()
        headers = {**self.headers, "X-Eval-Case-Id": case.id, "X-Eval-Repeat": str(repeat)}
        if scope is not None:
            headers["X-Eval-Seed"] = str(scope.seed)
        if self.ctx.prompt_version is not None:
            headers["X-Eval-Prompt"] = self.ctx.prompt_version.name
            headers["X-Eval-Prompt-Version"] = str(self.ctx.prompt_version.version)
        spec = conversation_spec(case)
        if spec is not None:
            conversation = f"{case.id}:{repeat}"
            headers["X-Eval-Conversation-Id"] = conversation
            session = TurnSession(lambda turn: self._post(turn, headers), conversation,
                                  self.done_field, self.url)  # fmt: skip
            return AgentResult(await converse(session, spec, self.customer))
        return AgentResult(output_of(await self._post(case.input, headers), self.url))

    async def _post(self, body: Any, headers: dict[str, str]) -> Any:
        """POST ``body``; the JSON answer, its reported usage counted."""
        assert self._client is not None
        response = await self._client.post(self.url, json=body, headers=headers)
        response.raise_for_status()
        try:
            answer = response.json()
        except ValueError as exc:
            kind = response.headers.get("content-type", "no content type")
            raise AgentOutputError(
                f"{self.url} answered {kind}, not JSON: {response.text[:120]!r}"
            ) from exc
        usage = answer.get("usage") if isinstance(answer, dict) else None
        scope = current_item.get()
        if scope is not None and isinstance(usage, dict):
            scope.usage.add(str(usage.get("model") or "unknown"),
                            int(usage.get("input_tokens") or 0),
                            int(usage.get("output_tokens") or 0))  # fmt: skip
        return answer

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class HttpConfig(KindConfig):
    """``agent: {http: URL}``: POST the case input as JSON to this URL."""

    http: str
    headers: dict[str, str] = Field(default_factory=dict)  # ${VAR} from the environment
    timeout_s: float = Field(60.0, gt=0)  # one request

    @field_validator("http")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value


@register
class HttpKind(AgentKind):
    key = "http"
    Config = HttpConfig
    memoize_unversioned = False  # the service can change without us knowing

    def describe(self, config: HttpConfig, loading: Loading) -> tuple[str, tuple[Path, ...]]:
        return f"http {config.http}", ()

    def build(self, config: HttpConfig, build: Build) -> Agent:
        return HttpAgent(config.http, build.ctx, headers=config.headers,
                         timeout_s=config.timeout_s, customer=build.customer,
                         done_field=config.done_field)  # fmt: skip
