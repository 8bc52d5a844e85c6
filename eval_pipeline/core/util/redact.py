"""Keep secret values out of anything we write: logs, errors, metadata, the store,
recordings. One redaction, used by every place that prints, stores or records a URL or a
configuration value:

- the values of secrets the process registered (API keys, Langfuse keys: ``register_secret``;
  a URL's password: ``register_url``), and each in the encodings a server echoes them back
  in: base64 (standard or URL-safe, padded or not: a ``Basic`` header's ``user:password``
  too) and URL-encoded (``encodings``);
- the password of any URL (``scheme://user:password@host`` → ``scheme://user:***@host``);
- query parameters and body fields whose names look secret (``SECRET_NAMES``; a team adds
  its own with ``EVAL_SECRET_FIELDS=name,other``): ``?api_key=…``, ``{"token": "…"}``, in
  requests and in answers (``scrub_answer``: an OAuth token endpoint's ``access_token``,
  ``refresh_token``, ``id_token``). A value masked in an answer is registered too, so the
  requests that carry it next are recorded masked (and replay: the agent gets ``***`` back
  from the recording and sends ``***`` on, which is what was recorded) and no output shows it.
"""

from __future__ import annotations

import base64
import functools
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

_SECRETS: set[str] = set()
# _SECRETS, longest first (a longer one is masked whole), kept as they are registered:
# ``redact`` runs on every string of every span a traced run sends (tens of thousands a run)
_LONGEST_FIRST: tuple[str, ...] = ()
MASK = "***"
# Keys for a server that takes any (llama.cpp's "none", a CI's "replay") are placeholders:
# masking them would turn every "none" in a report into "***". Real keys are far longer.
MIN_SECRET_CHARS = 8
# Names of query parameters and body fields whose values are secrets (case-insensitive,
# "-" and "_" alike).
SECRET_NAMES = frozenset({
    "apikey", "api_key", "key", "token", "access_token", "refresh_token", "id_token",
    "secret", "client_secret", "password", "passwd", "pwd", "auth", "authorization",
    "credentials", "sig", "signature", "session", "cookie", "private_key",
})  # fmt: skip
_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@")
_QUERY_VALUE = re.compile(r"([?&])([^=&\s#]+)=([^&\s#]+)")


def register_secret(value: str | None, *, encoded: bool = True) -> None:
    """``value`` (and, ``encoded``, its ``encodings``) masked from now on. A token an answer
    issued is registered with its URL-encoded form only: a run that logs in per item
    registers a few per item, and each one costs every later redaction a pass."""
    if value and len(value) >= MIN_SECRET_CHARS:
        _remember(encodings(value) if encoded else {value, quote(value, safe="")})


def register_url(url: str | None) -> None:
    """A URL's password, and its ``user:password`` as a ``Basic`` header carries it (base64:
    an echoed ``Authorization`` header), registered as secrets."""
    try:
        parts = urlsplit(url or "")
    except ValueError:
        return
    if parts.password:
        register_secret(parts.password)
        _remember(encodings(f"{parts.username or ''}:{parts.password}")[1:])


def _remember(values: Iterable[str]) -> None:
    global _LONGEST_FIRST
    _SECRETS.update(values)
    _LONGEST_FIRST = tuple(sorted(_SECRETS, key=len, reverse=True))


def encodings(value: str) -> list[str]:
    """``value`` and the forms a server may echo it in: base64 (standard and URL-safe, with
    and without padding) and URL-encoding."""
    raw = value.encode()
    coded = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    forms = [value, *sorted(coded | {c.rstrip("=") for c in coded}),
             quote(value, safe=""), quote_plus(value)]  # fmt: skip
    return list(dict.fromkeys(forms))


def secret_name(name: str) -> bool:
    """Whether a query parameter or field called ``name`` holds a secret."""
    return name.lower().replace("-", "_") in _secret_names(os.environ.get("EVAL_SECRET_FIELDS", ""))


@functools.lru_cache(maxsize=8)
def _secret_names(extra: str) -> frozenset[str]:
    """SECRET_NAMES and a team's own (EVAL_SECRET_FIELDS), as ``secret_name`` compares them."""
    names = (*SECRET_NAMES, *(n.strip() for n in extra.split(",") if n.strip()))
    return frozenset(n.lower().replace("-", "_") for n in names)


def redact(text: str) -> str:
    """``text`` with every registered secret, URL password and secret-named query value
    masked."""
    for secret in _LONGEST_FIRST:
        if secret in text:
            text = text.replace(secret, MASK)
    if "@" in text:  # (what either pattern needs to match at all)
        text = _USERINFO.sub(rf"\1{MASK}@", text)
    if "=" in text:
        text = _QUERY_VALUE.sub(
            lambda m: f"{m[1]}{m[2]}={MASK if secret_name(m[2]) else m[3]}", text
        )
    return text


def redact_url(url: str) -> str:
    """``url`` with its password and secret-named query values masked (the same URL
    otherwise: recordings still match on it)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    netloc = parts.netloc
    if "@" in netloc and ":" in netloc.split("@", 1)[0]:
        user = netloc.split("@", 1)[0].split(":", 1)[0]
        netloc = f"{user}:{MASK}@{netloc.split('@', 1)[1]}"
    query = urlencode([(k, MASK if secret_name(k) else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)],
                      safe="*")  # fmt: skip
    return redact(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))


def scrub(value: Any) -> Any:
    """A JSON-like value with secret-named fields' values masked and every string redacted
    (a request body before it is recorded)."""
    if isinstance(value, dict):
        return {k: MASK if isinstance(k, str) and secret_name(k) and isinstance(v, str)
                else scrub(v) for k, v in value.items()}  # fmt: skip
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


def redact_strings(value: Any) -> Any:
    """A JSON-like value with every string in it redacted (names left alone: a trace's
    input and output are shown as they were, secrets aside)."""
    if isinstance(value, dict):
        return {k: redact_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_strings(v) for v in value]
    return redact(value) if isinstance(value, str) else value


def scrub_answer(value: Any) -> Any:
    """A JSON-like answer (a response body) scrubbed as ``scrub`` does a request, each value
    it masks by name registered as a secret first: the token an OAuth endpoint issued is
    masked wherever it appears next (the request that sends it on, an echo, an output)."""
    _register_named(value)
    return scrub(value)


def _register_named(value: Any) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and secret_name(k) and isinstance(v, str):
                register_secret(v, encoded=False)
            else:
                _register_named(v)
    elif isinstance(value, list):
        for v in value:
            _register_named(v)


def scrub_form(text: str) -> str:
    """A form-encoded answer (``access_token=…&token_type=bearer``, as GitHub's token
    endpoint sends) with its secret-named values registered and masked."""
    pairs = parse_qsl(text, keep_blank_values=True)
    for name, value in pairs:
        if secret_name(name):
            register_secret(value, encoded=False)
    return urlencode([(k, MASK if secret_name(k) else v) for k, v in pairs], safe="*")
