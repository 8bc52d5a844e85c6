"""Hypothesis fuzzing (fixed budget, derandomized for CI) of the two parsers that read what
users and production hand us: the golden-case loader and the production-trace parser.
Whatever the input, they either return well-formed records or raise their own error type
with a message naming the file; they never crash with anything else."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval_pipeline.core.scoring.summary import MD_SPECIAL, md_escape
from eval_pipeline.core.suites.cases import DatasetError, GoldenCase, load_cases
from eval_pipeline.core.traces.observations import (
    MAX_FIELD_CHARS,
    TraceError,
    parse_observation,
    read_trace_file,
)

BUDGET = settings(max_examples=150, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture,
                                         HealthCheck.too_slow])  # fmt: skip

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,20}", fullmatch=True)
valid_cases = st.builds(
    lambda case_id, utterance, category, difficulty, tier: {
        "id": case_id, "input": {"customer_utterance": utterance},
        "expected_output": {"expected_items": []},
        "metadata": {"category": category, "difficulty": difficulty, "tier": tier},
    },
    ids, st.text(max_size=40), st.sampled_from(["simple", "greeting"]),
    st.sampled_from(["easy", "medium", "hard"]), st.sampled_from(["smoke", "full"]),
)  # fmt: skip


def load_text(tmp: Path, name: str, content: bytes) -> list[GoldenCase]:
    for old in tmp.glob("cases*"):
        old.unlink()
    (tmp / name).write_bytes(content)
    return load_cases(tmp, categories=["simple", "greeting"])


@BUDGET
@given(content=st.binary(max_size=300) | st.text(max_size=300).map(str.encode),
       name=st.sampled_from(["cases.yaml", "cases.jsonl"]))  # fmt: skip
def test_case_loader_never_crashes_on_arbitrary_bytes(tmp_path_factory, content, name):
    tmp = tmp_path_factory.mktemp("cases")
    try:
        cases = load_text(tmp, name, content)
    except DatasetError as exc:
        assert str(tmp / name) in str(exc) or "no cases" in str(exc)
        assert "Fix the file(s) named above" in str(exc)
    else:
        assert all(isinstance(c, GoldenCase) for c in cases)


@BUDGET
@given(raw=st.lists(json_values | valid_cases, max_size=5))
def test_case_loader_accepts_valid_cases_and_names_every_bad_field(tmp_path_factory, raw):
    tmp = tmp_path_factory.mktemp("cases")
    text = yaml.safe_dump({"cases": raw}, allow_unicode=True).encode()
    try:
        cases = load_text(tmp, "cases.yaml", text)
    except DatasetError as exc:
        assert exc.problems and all(str(tmp / "cases.yaml") in p for p in exc.problems)
    else:
        assert [c.model_dump(mode="json", exclude_none=True) for c in cases] == [
            {k: v for k, v in r.items() if v is not None} for r in raw
        ]


@BUDGET
@given(raw=st.lists(valid_cases, min_size=1, max_size=6, unique_by=lambda c: c["id"]))
def test_valid_cases_round_trip_through_both_formats(tmp_path_factory, raw):
    tmp = tmp_path_factory.mktemp("cases")
    from_yaml = load_text(tmp, "cases.yaml", yaml.safe_dump({"cases": raw}).encode())
    jsonl = "\n".join(json.dumps(r, ensure_ascii=False) for r in raw).encode()
    assert load_text(tmp, "cases.jsonl", jsonl) == from_yaml
    assert [c.id for c in from_yaml] == [r["id"] for r in raw]


observation_fields = st.fixed_dictionaries(
    {},
    optional={
        "id": st.text(max_size=10) | st.integers(), "traceId": st.text(max_size=10),
        "name": st.text(max_size=10) | st.none(), "startTime": st.text(max_size=25) | st.integers(),
        "input": json_values, "output": json_values | st.text(min_size=0, max_size=10),
        "metadata": json_values, "tags": st.lists(st.text(max_size=5), max_size=3) | st.none(),
        "level": st.sampled_from(["DEFAULT", "ERROR", "warning"]) | st.integers(),
        "latency": st.floats(allow_nan=False) | st.text(max_size=4) | st.none(),
        "usage": st.dictionaries(st.sampled_from(["input", "output"]), json_values),
        "totalCost": st.floats(min_value=0, max_value=10) | st.none(),
    },
)  # fmt: skip


@BUDGET
@given(obj=json_values | observation_fields)
def test_trace_parser_returns_a_record_or_a_trace_error(obj):
    try:
        record = parse_observation(obj, source="fuzz")
    except TraceError as exc:
        assert str(exc).startswith("fuzz:")
    else:
        for field in (record.input, record.output):
            assert len(json.dumps(field, default=str)) <= MAX_FIELD_CHARS + 200


@BUDGET
@given(lines=st.lists(st.binary(max_size=80) | observation_fields.map(
    lambda o: json.dumps(o, default=str).encode()), max_size=6))  # fmt: skip
def test_trace_files_with_any_bytes_parse_or_name_the_line(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("traces") / "traces.jsonl"
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines))
    try:
        records = list(read_trace_file(path))
    except TraceError as exc:
        assert f"{path}:" in str(exc)
    else:
        assert len(records) <= len(lines)


def test_an_oversized_trace_is_truncated_with_a_note():
    huge = {"id": "t1", "traceId": "t1", "name": "drive-thru", "startTime": "2026-11-20T10:00:00Z",
            "input": {"utterance": "x" * (3 * MAX_FIELD_CHARS)}, "output": "ok"}  # fmt: skip
    record = parse_observation(huge)
    assert record.input["_truncated"] is True and len(record.input["preview"]) == MAX_FIELD_CHARS
    assert any("input truncated" in note for note in record.notes)


def test_non_utf8_bytes_in_a_trace_are_replaced_with_a_note(tmp_path):
    observation = {"id": "t2", "traceId": "t2", "name": "drive-thru", "input": "caf\u00e9",
                   "startTime": "2026-11-20T10:00:00Z"}  # fmt: skip
    line = json.dumps(observation, ensure_ascii=False).encode()
    path = tmp_path / "traces.jsonl"
    path.write_bytes(line.replace("é".encode(), b"\xe9"))  # Latin-1, not UTF-8
    (record,) = read_trace_file(path)
    assert record.input == "caf\ufffd" and any("not UTF-8" in n for n in record.notes)


def test_jsonl_strings_may_hold_unicode_line_breaks(tmp_path):
    """Found by the fuzzer: U+0085 / U+2028 inside a string split the line in two."""
    case = {"id": "c1", "input": {"customer_utterance": "one\x85two\u2028three"},
            "metadata": {"category": "simple", "difficulty": "easy", "tier": "smoke"}}  # fmt: skip
    (loaded,) = load_text(tmp_path, "cases.jsonl", json.dumps(case, ensure_ascii=False).encode())
    assert loaded.input["customer_utterance"] == "one\x85two\u2028three"


@BUDGET
@given(st.text(alphabet=st.sampled_from(list("\\`*_{}[]<>|#()!ab \n\r")), max_size=60))
def test_report_text_cannot_inject_markdown_or_html(text):
    """Whatever data says (ids, comments, provider errors), in a report it stays text: every
    character Markdown or HTML would act on is backslash-escaped."""
    escaped = md_escape(text)
    assert "\n" not in escaped  # a table row stays one row
    i = 0
    while i < len(escaped):  # walk it as a Markdown renderer would
        if escaped[i] == "\\":
            assert i + 1 < len(escaped) and escaped[i + 1] in MD_SPECIAL
            i += 2
            continue
        assert escaped[i] not in MD_SPECIAL, (text, escaped)
        i += 1
