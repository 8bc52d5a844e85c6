"""Keep secret values out of anything we write: logs, errors, metadata, the store."""

from __future__ import annotations

_SECRETS: set[str] = set()
MASK = "***"
# Keys for a server that takes any (llama.cpp's "none", a CI's "replay") are placeholders:
# masking them would turn every "none" in a report into "***". Real keys are far longer.
MIN_SECRET_CHARS = 8


def register_secret(value: str | None) -> None:
    if value and len(value) >= MIN_SECRET_CHARS:
        _SECRETS.add(value)


def redact(text: str) -> str:
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
