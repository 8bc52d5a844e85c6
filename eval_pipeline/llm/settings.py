"""Which chat model the agents use. No endpoint configured → the offline model."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from eval_pipeline.core.redact import register_secret
from eval_pipeline.core.running.memo import source_fingerprint
from eval_pipeline.llm import offline as offline_package
from eval_pipeline.llm.offline.model import OFFLINE_MODEL_NAME


@cache
def _offline_fingerprint() -> str:
    return source_fingerprint([Path(offline_package.__file__).resolve().parent])


class LLMSettings(BaseModel):
    """Model settings; the API key is a SecretStr so it never shows in reprs or logs."""

    model_config = ConfigDict(frozen=True)

    model: str = OFFLINE_MODEL_NAME
    base_url: str | None = None
    api_key: SecretStr | None = None
    # None: the prompt's config.temperature (else 0.0). Set (EVAL_LLM_TEMPERATURE), it wins
    # over the prompt's, and the run says so (``notes``).
    temperature: float | None = None
    timeout_s: float = 60.0  # one request
    max_retries: int = 2  # per model call, by the client (the runner does not retry again)
    seed: int = 0
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
        """EVAL_LLM_BASE_URL, EVAL_LLM_API_KEY (or OPENAI_API_KEY), EVAL_LLM_MODEL, …"""
        env = dict(os.environ if env is None else env)
        key = env.get("EVAL_LLM_API_KEY") or env.get("OPENAI_API_KEY")
        base_url = env.get("EVAL_LLM_BASE_URL") or None
        default_model = "gpt-4o-mini" if (key or base_url) else OFFLINE_MODEL_NAME
        return cls.create(
            model=env.get("EVAL_LLM_MODEL") or default_model,
            base_url=base_url,
            api_key=key,
            temperature=float(env["EVAL_LLM_TEMPERATURE"])
            if env.get("EVAL_LLM_TEMPERATURE")
            else None,
            timeout_s=float(env.get("EVAL_LLM_TIMEOUT_S", 60.0)),
            max_retries=int(env.get("EVAL_LLM_MAX_RETRIES", 2)),
        )

    @classmethod
    def create(cls, *, api_key: str | None = None, **fields: Any) -> LLMSettings:
        register_secret(api_key)
        return cls(api_key=SecretStr(api_key) if api_key else None, **fields)

    def with_prompt_config(self, config: dict[str, Any]) -> LLMSettings:
        """Apply a prompt version's config (model, temperature) on top of these settings.

        An explicitly set temperature wins over the prompt's, and a note says so. The
        offline model keeps its name: a prompt written for another model still runs
        offline, and its temperature still applies.
        """
        update: dict[str, Any] = {}
        wanted = config.get("temperature")
        if self.temperature is None:
            update["temperature"] = float(wanted) if wanted is not None else 0.0
        elif wanted is not None and float(wanted) != self.temperature:
            note = (f"temperature {self.temperature:g} (EVAL_LLM_TEMPERATURE) overrides the "
                    f"prompt's config.temperature {float(wanted):g}")  # fmt: skip
            update["notes"] = (*self.notes, note)
        if self.provider == "openai" and config.get("model"):
            update["model"] = str(config["model"])
        return self.model_copy(update=update)

    def public_params(self) -> dict[str, Any]:
        """What may be recorded with a run (never the key). Offline, the model's "weights"
        are its code: its hash is recorded, so editing a policy invalidates memoized items."""
        offline = {"offline_model": _offline_fingerprint()} if self.provider == "offline" else {}
        return {
            **offline,
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "seed": self.seed,
            **({"recording": self.recording} if self.recording != "off" else {}),
        }
