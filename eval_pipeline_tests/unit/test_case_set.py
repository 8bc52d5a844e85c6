"""A suite's cases held compactly (issue 47, "suites stream"): a JSONL file is read a line
at a time and each validated case kept as its JSON, so memory follows the file's size
(e2e/test_large_suite.py measures it); what a run reads of every case (ids, tiers,
categories, the dataset version, the draw order) is read without making the cases, and
each case reads back as it was validated."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
import yaml

from eval_pipeline.core.evaluation.plan import draw_order
from eval_pipeline.core.store.records import RunRecord
from eval_pipeline.core.suites.cases import (
    CaseSet,
    DatasetError,
    GoldenCase,
    content_hash,
    dataset_version,
    load_cases,
    select_tier,
)

DATASET = Path(__file__).resolve().parents[2] / "examples" / "datasets" / "drive_thru"


@pytest.fixture
def raws() -> list[dict]:
    return yaml.safe_load((DATASET / "cases.yaml").read_text())["cases"]


def write_jsonl(folder: Path, lines: list[str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cases.jsonl"
    path.write_bytes(b"".join((x.encode() if isinstance(x, str) else x) + b"\n" for x in lines))
    return path


def test_each_case_reads_back_as_validated_and_the_dataset_version_is_unchanged(tmp_path, raws):
    # keys in an order of the team's own: a case reads back with its keys in that order
    raws[0] = {"metadata": raws[0]["metadata"], "id": raws[0]["id"],
               "input": {"z_last": 1, **raws[0]["input"]}}  # fmt: skip
    write_jsonl(tmp_path / "d", [json.dumps(r, ensure_ascii=False) for r in raws])
    cases = load_cases(tmp_path / "d")
    assert isinstance(cases, CaseSet) and len(cases) == len(raws)
    assert list(cases) == [GoldenCase.model_validate(r) for r in raws]
    assert list(cases[0].input) == ["z_last", "customer_utterance"]
    # the version stored with every earlier run: a hash of the cases' canonical form
    before = content_hash(sorted((GoldenCase.model_validate(r).model_dump(mode="json")
                                  for r in raws), key=lambda c: c["id"]))  # fmt: skip
    assert dataset_version(cases) == cases.version == before == dataset_version(list(cases))


def test_tiers_draws_and_slices_are_views_read_by_id(tmp_path, raws):
    write_jsonl(tmp_path / "d", [json.dumps(r) for r in raws])
    cases = load_cases(tmp_path / "d")
    smoke = [r["id"] for r in raws if r["metadata"]["tier"] == "smoke"]
    assert [c.id for c in select_tier(cases, "smoke")] == cases.of_tier("smoke").ids == smoke
    assert cases[2:5].ids == [r["id"] for r in raws[2:5]] and cases[-1].id == raws[-1]["id"]
    assert cases.with_ids(lambda i: i.endswith("1")).ids == [
        r["id"] for r in raws if r["id"].endswith("1")]  # fmt: skip
    run = RunRecord(run_id="r", suite="drive_thru", prompt_name="", prompt_version="v1",
                    prompt_hash="h", dataset_version=cases.version, model="m",
                    tier="smoke")  # fmt: skip
    drawn = draw_order(cases, run)
    assert sorted(drawn.ids) == sorted(cases.ids)
    assert drawn.ids == [c.id for c in draw_order(list(cases), run)]  # the same, as a list
    assert pickle.loads(pickle.dumps(cases)) == cases  # (a run's later steps get it)


def test_a_jsonl_file_that_is_not_utf8_is_refused_whole_naming_the_byte(tmp_path, raws):
    lines = [json.dumps({"id": "no fields"}), json.dumps(raws[1]),
             json.dumps(raws[2]).encode().replace(b'utterance": "', b'utterance": "Caf\xe9 ')]
    path = write_jsonl(tmp_path / "d", lines)
    with pytest.raises(DatasetError) as info:
        load_cases(tmp_path / "d")
    with pytest.raises(UnicodeDecodeError) as whole:
        path.read_bytes().decode("utf-8")
    assert info.value.problems == [
        f"{path}: not UTF-8 text ({whole.value.reason} at byte {whole.value.start})"]


def test_a_lone_surrogate_is_refused_naming_the_case_and_field(tmp_path, raws):
    """``\\ud800`` alone is valid JSON but no text: the dataset version raised
    UnicodeEncodeError, a traceback (exit 1)."""
    raw = json.dumps(raws[0]).replace("Egg McMuffin\"}", "Egg McMuffin \\ud800\"}", 1)
    path = write_jsonl(tmp_path / "d", [raw, json.dumps(raws[1])])
    with pytest.raises(DatasetError) as info:
        load_cases(tmp_path / "d")
    (problem,) = info.value.problems
    assert problem.startswith(f"{path}:1 case 'dt-simple-01': field 'input.customer_utterance': "
                              "'\\ud800' is half of a UTF-16 surrogate pair")


def test_the_shipped_suites_read_the_same_from_yaml_and_jsonl(tmp_path, raws):
    shutil.copytree(DATASET, tmp_path / "yaml")
    write_jsonl(tmp_path / "jsonl", [json.dumps(r) for r in raws])
    from_yaml, from_jsonl = load_cases(tmp_path / "yaml"), load_cases(tmp_path / "jsonl")
    assert from_yaml == from_jsonl and from_yaml.version == from_jsonl.version
