"""Which chat model the agents use. No endpoint configured → the offline model."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from eval_pipeline.core.memo import source_fingerprint
from eval_pipeline.core.redact import register_secret
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
    temperature: float = 0.0
    timeout_s: float = 60.0
    max_retries: int = 2
    seed: int = 0

    @property
    def provider(self) -> Literal["openai", "offline"]:
        return "openai" if self.base_url or self.api_key else "offline"

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
            temperature=float(env.get("EVAL_LLM_TEMPERATURE", 0.0)),
            timeout_s=float(env.get("EVAL_LLM_TIMEOUT_S", 60.0)),
        )

    @classmethod
    def create(cls, *, api_key: str | None = None, **fields: Any) -> LLMSettings:
        register_secret(api_key)
        return cls(api_key=SecretStr(api_key) if api_key else None, **fields)

    def with_prompt_config(self, config: dict[str, Any]) -> LLMSettings:
        """Apply a prompt version's config (model, temperature) on top of these settings.

        The offline model keeps its name: a prompt written for another model still runs
        offline, and its temperature still applies.
        """
        update: dict[str, Any] = {}
        if "temperature" in config:
            update["temperature"] = float(config["temperature"])
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
        }
