"""The redaction rule for what comes back: secret-named fields of answers, and registered
secrets in the encodings servers echo them in (core/util/redact.py)."""

from __future__ import annotations

import base64

from eval_pipeline.core.util.redact import (
    redact,
    register_secret,
    register_url,
    scrub_answer,
    scrub_form,
)


def test_a_basic_header_built_from_a_url_password_is_masked():
    register_url("http://bob:PW@127.0.0.1:9/v1")  # short: only its base64 pair is a secret
    pair = base64.b64encode(b"bob:PW").decode()
    assert redact(f"Invalid credentials: Basic {pair}") == "Invalid credentials: Basic ***"
    kept = "PW stays: too short to be a secret alone"
    assert redact(kept) == kept


def test_a_registered_key_is_masked_base64_and_url_encoded():
    key = "sk-unit/key+with=chars"
    register_secret(key)
    for form in (base64.b64encode(key.encode()).decode().rstrip("="),
                 base64.urlsafe_b64encode(key.encode()).decode(), "sk-unit%2Fkey%2Bwith%3Dchars"):
        assert redact(f"echo {form} end") == "echo *** end", form


def test_tokens_an_answer_issued_are_masked_there_and_wherever_they_appear_next():
    answer = {"access_token": "at-unit-0001-secret", "token_type": "Bearer",
              "nested": [{"id_token": "it-unit-0001-secret"}], "expires_in": 3600}
    assert scrub_answer(answer) == {"access_token": "***", "token_type": "Bearer",
                                    "nested": [{"id_token": "***"}], "expires_in": 3600}
    assert redact('{"proof": "at-unit-0001-secret"}') == '{"proof": "***"}'
    assert scrub_form("access_token=gho_unit00001&scope=repo") == "access_token=***&scope=repo"
    assert redact("echoed gho_unit00001") == "echoed ***"


def test_a_secret_registered_after_a_redaction_is_masked_in_the_next_longest_first(monkeypatch):
    """redact keeps the secrets sorted as they are registered (it runs on every string of
    every traced span): one registered later is masked from then on, a longer one whole
    even where a shorter one lies inside it, and EVAL_SECRET_FIELDS is read as it is now."""
    assert redact("token sk-later-registered-1 here") == "token sk-later-registered-1 here"
    register_secret("sk-later-registered-1", encoded=False)
    register_secret("sk-later-registered-1-and-longer", encoded=False)
    assert redact("a sk-later-registered-1 b") == "a *** b"
    assert redact("a sk-later-registered-1-and-longer b") == "a *** b"
    assert redact("GET /x?team_pin=42&q=1") == "GET /x?team_pin=42&q=1"
    monkeypatch.setenv("EVAL_SECRET_FIELDS", "team-pin")
    assert redact("GET /x?team_pin=42&q=1") == "GET /x?team_pin=***&q=1"
