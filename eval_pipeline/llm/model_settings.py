"""Which chat model the agents use, and how to talk to its server. No endpoint → offline.

OpenAI-compatible servers differ where it hurts an evaluation (measured on llama.cpp's
server: docs/model-servers.md): some use tools only when ``tool_choice`` is sent, some
honour ``max_tokens`` but not ``max_completion_tokens``, some reject an assistant turn whose
``content`` is null next to its tool calls. ``EVAL_LLM_COMPAT`` picks the settings a server
needs; each can also be set on its own.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.running.memo import source_fingerprint
from eval_pipeline.core.util.redact import redact_url, register_secret, register_url
from eval_pipeline.llm import offline as offline_package
from eval_pipeline.llm.offline.model import OFFLINE_MODEL_NAME

ToolTurnContent = Literal["null", "empty"]
MaxTokensField = Literal["max_completion_tokens", "max_tokens"]

# What each kind of server needs (EVAL_LLM_COMPAT); explicit settings win.
COMPAT: dict[str, dict[str, Any]] = {
    "openai": {},
    "llama.cpp": {"tool_choice": "auto", "max_tokens_field": "max_tokens",
                  "tool_turn_content": "empty", "max_tokens": 512},
    "vllm": {"max_tokens_field": "max_tokens"},
    "ollama": {"max_tokens_field": "max_tokens"},
}  # fmt: skip


@cache
def _offline_fingerprint() -> str:
    return source_fingerprint([Path(offline_package.__file__).resolve().parent])


_REPLAYING: ContextVar[bool] = ContextVar("eval_replaying", default=False)


@contextmanager
def replaying(active: bool = True) -> Iterator[None]:
    """While a replay run is prepared, models built from the environment with no endpoint
    (an LLM judge's, built when the suite is read) talk to the recordings, as the agent's
    do, instead of silently becoming the offline model."""
    token = _REPLAYING.set(active)
    try:
        yield
    finally:
        _REPLAYING.reset(token)


# What a replay lends an SDK that will not build a client without a key
# (llm/agent_endpoint.py ``agent_environment``): never taken for the run's own key.
REPLAY_KEY = "sk-replay-placeholder-nothing-is-sent"


def sdk_key(value: str | None) -> str | None:
    """OPENAI_API_KEY as the run's key, unless it is the replay's placeholder."""
    return None if value == REPLAY_KEY else value or None


class SettingsError(ConfigurationError):
    """An EVAL_LLM_* variable has a value we cannot use; the message names it."""


class LLMSettings(BaseModel):
    """Model settings; the API key is a SecretStr so it never shows in reprs or logs."""

    model_config = ConfigDict(frozen=True)

    model: str = OFFLINE_MODEL_NAME
    base_url: str | None = None
    api_key: SecretStr | None = None
    # None: the prompt's config.temperature (else 0.0). Set (EVAL_LLM_TEMPERATURE), it wins
    # over the prompt's, and the run says so (``notes``).
    temperature: float | None = None
    # One request. None: the item timeout divided by the tries per call, so that one call,
    # retries included, fits in one attempt of an item (``for_item_timeout``).
    timeout_s: float | None = None
    max_retries: int = 2  # per model call, by the client (the runner does not retry again)
    seed: int = 0
    max_tokens: int | None = None  # a cap on every answer (unset: the server's default)
    max_tokens_field: MaxTokensField = "max_completion_tokens"
    tool_choice: str | None = None  # sent with every request that offers tools
    tool_turn_content: ToolTurnContent = "null"  # content of an assistant turn with tool calls
    notes: tuple[str, ...] = ()  # what the prompt's config could not change, and why
    # Record model calls to a file, or answer them from it with no endpoint (llm/recording.py).
    recording: Literal["off", "record", "replay"] = "off"
    recordings_path: Path | None = None

    @property
    def provider(self) -> Literal["openai", "offline"]:
        configured = self.base_url or self.api_key or self.recording == "replay"
        return "openai" if configured else "offline"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> LLMSettings:
        """EVAL_LLM_BASE_URL, EVAL_LLM_API_KEY (or OPENAI_API_KEY), EVAL_LLM_MODEL, … (see
        docs/configuration.md). A bad value raises SettingsError naming the variable."""
        env = dict(os.environ if env is None else env)
        check_timeout_s(env), checks_model(env)  # (the checks' own settings, refused early)
        explicit = {
            field: convert(env[name], name)
            for name, (field, convert) in _VARIABLES.items()
            if env.get(name)
        }
        return cls.configured(
            model=env.get("EVAL_LLM_MODEL") or None, base_url=env.get("EVAL_LLM_BASE_URL"),
            api_key=env.get("EVAL_LLM_API_KEY") or sdk_key(env.get("OPENAI_API_KEY")),
            compat=env.get("EVAL_LLM_COMPAT") or None, **explicit,
        )  # fmt: skip

    @classmethod
    def configured(cls, *, model: str | None = None, base_url: str | None = None,
                   api_key: str | None = None, compat: str | None = None,
                   **explicit: Any) -> LLMSettings:  # fmt: skip
        """The settings from values (the environment's, or a Dagster resource's): the
        server kind's presets (``compat``, COMPAT) under the ``explicit`` ones, and the
        default model: the offline one without an endpoint, key or replay."""
        compat = compat or "openai"
        if compat not in COMPAT:
            raise SettingsError(f"EVAL_LLM_COMPAT={compat!r}: use one of {', '.join(COMPAT)}")
        base_url = base_url or None
        replay = _REPLAYING.get() and not (api_key or base_url)
        default_model = "gpt-4o-mini" if (api_key or base_url or replay) else OFFLINE_MODEL_NAME
        variables = {field: (name, convert) for name, (field, convert) in _VARIABLES.items()}
        given = {
            k: variables[k][1](v, variables[k][0]) if isinstance(v, str) and k in variables else v
            for k, v in explicit.items()
            if v is not None
        }  # (a choice is checked as its variable is, whoever set it)
        return cls.create(
            model=model or default_model, base_url=base_url, api_key=api_key,
            **{**COMPAT[compat], **given}, **({"recording": "replay"} if replay else {}),
        )  # fmt: skip

    @classmethod
    def create(cls, *, api_key: str | None = None, **fields: Any) -> LLMSettings:
        register_secret(api_key)
        register_url(fields.get("base_url"))
        return cls(api_key=SecretStr(api_key) if api_key else None, **fields)

    def with_prompt_config(self, config: dict[str, Any]) -> LLMSettings:
        """Apply a prompt version's config (model, temperature, max_tokens) on top of these
        settings.

        An explicitly set temperature wins over the prompt's, and a note says so. The
        offline model keeps its name: a prompt written for another model still runs
        offline, and its temperature still applies.
        """
        update: dict[str, Any] = {}
        for key in config:  # other keys are the team's own (an agent may read them) …
            near = difflib.get_close_matches(str(key), PROMPT_CONFIG, n=1, cutoff=0.8)
            if key not in PROMPT_CONFIG and near:
                raise SettingsError(f"config.{key}: not a setting eval-pipeline reads (did you "
                                    f"mean {near[0]!r}?)")
        wanted = config.get("temperature")
        if wanted is not None:
            wanted = TEMPERATURE(wanted, "config.temperature")
        if self.temperature is None:
            update["temperature"] = wanted if wanted is not None else 0.0
        elif wanted is not None and wanted != self.temperature:
            note = (f"temperature {self.temperature:g} (EVAL_LLM_TEMPERATURE) overrides the "
                    f"prompt's config.temperature {wanted:g}")  # fmt: skip
            update["notes"] = (*self.notes, note)
        if self.max_tokens is None and config.get("max_tokens"):
            update["max_tokens"] = MAX_TOKENS(config["max_tokens"], "config.max_tokens")
        if self.provider == "openai" and config.get("model"):
            update["model"] = str(config["model"])
        return self.model_copy(update=update)

    def for_run(self, prompt: Any, item_timeout_s: float) -> LLMSettings:
        """The settings one run's model calls use: the prompt version's config on top (a
        ``PromptVersion`` or None), each request fitting in an item attempt."""
        config = prompt.config if prompt is not None else {}
        try:
            configured = self.with_prompt_config(config)
        except SettingsError as exc:
            raise SettingsError(f"prompt {prompt.name} v{prompt.version}: {exc}; fix the "
                                "prompt version's config") from None  # fmt: skip
        return configured.for_item_timeout(item_timeout_s)

    def for_item_timeout(self, item_timeout_s: float) -> LLMSettings:
        """The request timeout inside an item attempt of ``item_timeout_s`` seconds: one
        model call, all its tries included, fits in it. A request timeout set explicitly is
        kept; when its tries cannot fit, a note says so."""
        tries = 1 + self.max_retries
        if self.timeout_s is None:
            return self.model_copy(update={"timeout_s": round(item_timeout_s / tries, 3)})
        if self.timeout_s * tries <= item_timeout_s:
            return self
        note = (f"one model call may take {tries} × {self.timeout_s:g} s (EVAL_LLM_TIMEOUT_S "
                f"× tries) but an item attempt only {item_timeout_s:g} s (--timeout): it is "
                "cut at the item timeout")  # fmt: skip
        return self.model_copy(update={"notes": (*self.notes, note)})

    def public_params(self) -> dict[str, Any]:
        """What may be recorded with a run (never the key). Offline, the model's "weights"
        are its code: its hash is recorded, so editing a policy invalidates memoized items."""
        offline = {"offline_model": _offline_fingerprint()} if self.provider == "offline" else {}
        server = {
            "max_tokens": self.max_tokens,
            "tool_choice": self.tool_choice,
            **({"max_tokens_field": "max_tokens"} if self.max_tokens_field == "max_tokens"
               else {}),
            **({"tool_turn_content": "empty"} if self.tool_turn_content == "empty" else {}),
        }  # fmt: skip
        return {
            **offline,
            "provider": self.provider,
            "model": self.model,
            "base_url": redact_url(self.base_url) if self.base_url else None,
            "temperature": self.temperature,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "seed": self.seed,
            **{k: v for k, v in server.items() if v is not None},
            **({"recording": self.recording} if self.recording != "off" else {}),
        }


def _number(kind: type, low: float | None = None, high: float | None = None) -> Any:
    """A converter for a numeric setting (a variable's text, or a file's value): a finite
    ``kind`` within [low, high]; ``name`` says where it was read."""

    def convert(value: Any, name: str) -> Any:
        try:
            if isinstance(value, bool) or (kind is int and isinstance(value, float)):
                raise ValueError
            number = kind(value)
        except (TypeError, ValueError):
            raise SettingsError(f"{name}={value!r}: expected a {kind.__name__}") from None
        if (
            not math.isfinite(number)
            or (low is not None and number < low)
            or (high is not None and number > high)
        ):
            bounds = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
            raise SettingsError(f"{name}={value!r}: must be a finite number {bounds}")
        return number

    return convert


def _choice(*allowed: str) -> Any:
    def convert(value: str, name: str) -> str:
        if value not in allowed:
            raise SettingsError(f"{name}={value!r}: use one of {', '.join(allowed)}")
        return value

    return convert


TEMPERATURE = _number(float, 0, 2)
MAX_TOKENS = _number(int, 1)
_VARIABLES = {
    "EVAL_LLM_TEMPERATURE": ("temperature", TEMPERATURE),
    "EVAL_LLM_TIMEOUT_S": ("timeout_s", _number(float, 0.001)),
    "EVAL_LLM_MAX_RETRIES": ("max_retries", _number(int, 0, 20)),
    "EVAL_LLM_MAX_TOKENS": ("max_tokens", MAX_TOKENS),
    "EVAL_LLM_MAX_TOKENS_FIELD": ("max_tokens_field", _choice("max_completion_tokens",
                                                              "max_tokens")),
    "EVAL_LLM_TOOL_CHOICE": ("tool_choice", _choice("auto", "required", "none")),
    "EVAL_LLM_TOOL_TURN_CONTENT": ("tool_turn_content", _choice("null", "empty")),
}  # fmt: skip
PROMPT_CONFIG = ("model", "temperature", "max_tokens")  # what a prompt's config sets here
CHECK_TIMEOUT = _number(float, 0.001)
CHECK_MODEL = _choice("0", "1")


def check_timeout_s(env: Mapping[str, str] | None = None) -> float:
    """How long a check (GET /models, doctor's probe) waits: EVAL_LLM_CHECK_TIMEOUT_S, 30 s.
    A single-slot server (llama.cpp) answers only after the request it is computing."""
    text = (os.environ if env is None else env).get("EVAL_LLM_CHECK_TIMEOUT_S")
    return CHECK_TIMEOUT(text, "EVAL_LLM_CHECK_TIMEOUT_S") if text else 30.0


def checks_model(env: Mapping[str, str] | None = None) -> bool:
    """Whether a run checks its model against the endpoint's listing first:
    EVAL_LLM_CHECK_MODEL, 1 (0 for gateways that route names they do not list)."""
    text = (os.environ if env is None else env).get("EVAL_LLM_CHECK_MODEL")
    return CHECK_MODEL(text, "EVAL_LLM_CHECK_MODEL") != "0" if text else True
