"""Keep secret values out of anything we write: logs, errors, metadata, the store."""

from __future__ import annotations

_SECRETS: set[str] = set()
MASK = "***"


def register_secret(value: str | None) -> None:
    if value and len(value) >= 4:
        _SECRETS.add(value)


def redact(text: str) -> str:
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
