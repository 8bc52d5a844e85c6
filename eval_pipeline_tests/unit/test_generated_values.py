"""Replay compares a model call's generated values by their order of appearance, wherever
in its text they are (issue 46): an agent that names memories with ``uuid4()`` writes a
new name into its tool results and its next prompt on every run, and 11 of 15 items missed
on replay. The seal stays tight: any other difference in the text still misses."""

from __future__ import annotations

import hashlib
import json
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from eval_pipeline.core.running.ids import Generated, steady
from eval_pipeline.llm.recording import (
    Belongs,
    Entry,
    RecordingSession,
    first_difference,
    load_entries,
    request_key,
)

CHAT = "http://127.0.0.1:8080/v1/chat/completions"
BUDGET = settings(max_examples=200, deadline=None, derandomize=True)


def ulid() -> str:
    """A ULID as python-ulid writes one: 48 bits of milliseconds, 80 random, base 32."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    number = (1_764_000_000_000 << 80) | int.from_bytes(uuid.uuid4().bytes[:10], "big")
    return "".join(alphabet[(number >> (5 * i)) & 31] for i in reversed(range(26)))


# Each a fresh draw of one kind of generated value, in the spellings agents write.
DRAWS = {
    "uuid4": lambda: str(uuid.uuid4()),
    "uuid4 upper": lambda: str(uuid.uuid4()).upper(),
    "uuid4 hex": lambda: uuid.uuid4().hex,
    "uuid1": lambda: str(uuid.uuid1()),
    "ulid": ulid,
}

# Text around the values: words, numbers, punctuation (no letter or digit touching a value).
words = st.text(st.sampled_from("abcxyz0129 .,:;'\"\n-_/()"), max_size=20)


def chat(system: str, tool: str) -> dict:
    return {"model": "gpt-4o-mini", "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "upsert_memory", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": tool}]}  # fmt: skip


def filled(template: list, draws: dict[int, str]) -> str:
    return "".join(f" {draws[p]} " if isinstance(p, int) else p for p in template)


templates = st.lists(words | st.integers(0, 3), min_size=1, max_size=8)


@BUDGET
@given(templates, templates, st.sampled_from(sorted(DRAWS)))
def test_a_request_is_the_same_whichever_values_were_drawn(system, tool, kind):
    """The same slots filled by two independent draws: the same key (the memory's name in
    the tool result and in the next system prompt, the same placeholder both times)."""
    first = {slot: DRAWS[kind]() for slot in range(4)}
    second = {slot: DRAWS[kind]() for slot in range(4)}
    a = chat(filled(system, first), filled(tool, first))
    b = chat(filled(system, second), filled(tool, second))
    assert request_key("POST", CHAT, a) == request_key("POST", CHAT, b)
    assert steady(a) == steady(b)


@BUDGET
@given(templates, templates, templates)
def test_other_text_never_collides(system, tool, other):
    """Text that differs in anything but its draws never matches: the same values drawn
    into two different texts keep their keys apart."""
    draws = {slot: str(uuid.uuid4()) for slot in range(4)}
    if filled(tool, draws) == filled(other, draws):
        return
    a = chat(filled(system, draws), filled(tool, draws))
    b = chat(filled(system, draws), filled(other, draws))
    assert request_key("POST", CHAT, a) != request_key("POST", CHAT, b)


@BUDGET
@given(st.integers(0, 10**40), st.integers(0, 10**40), st.sampled_from(["", "0x", "#", "id "]))
def test_two_numbers_match_only_when_equal(left, right, prefix):
    a, b = chat(f"order {prefix}{left}", ""), chat(f"order {prefix}{right}", "")
    assert (request_key("POST", CHAT, a) == request_key("POST", CHAT, b)) == (left == right)


def test_numbers_checksums_and_words_are_content():
    """What only looks drawn: a number, a checksum without a uuid's version digits, a long
    number, a value glued to a word. Two of a kind never match."""
    pairs = [
        ("order 12345", "order 12346"),
        ("md5 d41d8cd98f00b204e9800998ecf8427e", "md5 0cc175b9c0f1b6a831c399e269772661"),
        ("account 01234567890123456789012345", "account 01234567890123456789012346"),
        (f"key x{uuid.uuid4()}", f"key x{uuid.uuid4()}"),
        ("Orders since 2026-11-24", "Orders since 2026-11-25"),  # a bare date
        ("epoch 1764000000000", "epoch 1764000000001"),  # epoch ms: not built in
    ]
    for left, right in pairs:
        assert request_key("POST", CHAT, chat(left, "")) != request_key(
            "POST", CHAT, chat(right, "")
        ), (left, right)


def test_which_values_recur_is_compared():
    """The same memory named twice is not two memories: where a value recurred, the same
    value must recur."""
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    again, other = chat(f"memory {a}", f"stored {a}"), chat(f"memory {a}", f"stored {b}")
    assert request_key("POST", CHAT, again) != request_key("POST", CHAT, other)


def test_a_keyed_id_and_the_same_value_in_text_are_one_placeholder():
    a = str(uuid.uuid4())
    body = chat(f"last call {a}", "ok")
    body["messages"][2]["tool_calls"][0]["id"] = a
    assert steady(body)["messages"][0]["content"] == "last call <id 1>"
    assert steady(body)["messages"][2]["tool_calls"][0]["id"] == "<id 1>"


def test_a_teams_own_patterns():
    ours = Generated((r"ord-[0-9a-f]{10}",))
    a, b = chat("order ord-0123456789", ""), chat("order ord-abcdef0123", "")
    assert request_key("POST", CHAT, a) != request_key("POST", CHAT, b)
    assert request_key("POST", CHAT, a, ours) == request_key("POST", CHAT, b, ours)


def test_another_api_is_compared_as_it_is():
    """A tool's web API: a uuid there is the tool's data (only times are masked)."""
    url = "http://127.0.0.1:9/memories"
    a, b = {"name": str(uuid.uuid4())}, {"name": str(uuid.uuid4())}
    assert request_key("POST", url, a) != request_key("POST", url, b)


def test_a_replayed_answer_quotes_the_values_this_run_drew(tmp_path):
    """The model quotes a memory's name back (to update it): the recorded answer names the
    recorded memory, the replay gets the name this run drew in its place."""
    old, new = str(uuid.uuid4()), str(uuid.uuid4())
    answer = {"choices": [{"message": {"tool_calls": [{"function": {
        "name": "upsert_memory", "arguments": json.dumps({"memory_id": old})}}]}}]}  # fmt: skip
    entry = Entry("POST", CHAT, chat(f"memory {old}", "ok"), 200, "application/json", answer)
    session = RecordingSession(tmp_path / "r.jsonl", "record", Belongs("s", "v0"))
    replayed = session.answer(entry, chat(f"memory {new}", "ok"))
    assert old not in replayed.decode() and new in replayed.decode()
    assert session.answer(entry, chat(f"memory {old}", "ok")) == json.dumps(answer).encode()


def test_a_recording_made_before_this_rule_replays(tmp_path):
    """Keys are derived when a file is read: a file written before (format 2, as it was
    written then) answers a request with other uuids."""
    old = str(uuid.uuid4())
    line = json.dumps({"item": "c#0", "call": 0, "method": "POST", "url": CHAT,
                       "request": chat(f"memory {old}", f"stored {old}"), "status": 200,
                       "content_type": "application/json",
                       "response": {"id": "rec-1"}}) + "\n"  # fmt: skip
    header = {"recording": {"format": 2, "suite": "s", "version": "v0", "requests": 1,
                            "sha256": hashlib.sha256(line.encode()).hexdigest()}}  # fmt: skip
    path = tmp_path / "v0.jsonl"
    path.write_text(json.dumps(header) + "\n" + line)
    entries = load_entries(path, Belongs("s", "v0"))
    new = str(uuid.uuid4())
    assert request_key("POST", CHAT, chat(f"memory {new}", f"stored {new}")) in entries


def test_a_miss_shows_where_the_texts_part():
    """Before: `differs at messages[0].content` and the same first 80 characters twice."""
    prompt = "You are a helpful assistant with memories. " * 10
    recorded = chat(prompt + "User likes pizza. Be brief.", "")
    now = chat(prompt + "User likes pasta. Be brief.", "")
    said = first_difference(steady(recorded), steady(now))
    at = len(prompt) + len("User likes p")
    assert said.startswith(f"messages[0].content, from character {at} of {len(prompt) + 27} ")
    assert "likes pizza. Be brief.'" in said and "likes pasta. Be brief.'" in said
    assert prompt[:40] not in said  # not the start of the prompt


def test_a_miss_shows_short_texts_whole():
    said = first_difference(chat("What time is it in Tokyo?", ""), chat("What is the time?", ""))
    assert said == ("messages[0].content (recorded 'What time is it in Tokyo?', now 'What is "
                    "the time?')")  # fmt: skip
