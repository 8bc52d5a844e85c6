"""Golden dataset loading: the shipped dataset is valid; bad files fail with file, case, field."""

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from eval_pipeline.core.suites.cases import DatasetError, dataset_version, select_tier
from eval_pipeline_tests.helpers import suite

REPO_DATASETS = Path(__file__).resolve().parents[2] / "examples" / "datasets"


def drive_thru_at(datasets: Path):
    """The drive_thru suite with its dataset at ``datasets/drive_thru``."""
    return replace(suite("drive_thru"), dataset_dir=datasets / "drive_thru")


@pytest.fixture
def datasets(tmp_path: Path) -> Path:
    shutil.copytree(REPO_DATASETS / "drive_thru", tmp_path / "drive_thru")
    return tmp_path


def write_cases(datasets: Path, text: str) -> Path:
    path = datasets / "drive_thru" / "cases.yaml"
    path.write_text(text)
    return path


def test_shipped_dataset_meets_the_coverage_rules():
    drive_thru = suite("drive_thru")
    cases = drive_thru.load_cases()
    assert len(cases) >= 40
    assert {c.category for c in cases} == set(drive_thru.categories)
    empty = [c for c in cases if not c.expected_output["expected_items"]]
    assert len(empty) >= len(cases) / 4
    assert len(select_tier(cases, "smoke")) >= 10
    assert len({c.id for c in cases}) == len(cases)


def test_dataset_version_is_content_based(datasets):
    suite = drive_thru_at(datasets)
    before = dataset_version(suite.load_cases())
    path = datasets / "drive_thru" / "cases.yaml"
    path.write_text(path.read_text().replace("# Drive-thru", "# reformatted\n# Drive-thru"))
    assert dataset_version(suite.load_cases()) == before
    path.write_text(path.read_text().replace("Two hash browns please", "Two hash browns"))
    assert dataset_version(suite.load_cases()) != before


CASE = """  - id: {id}
    input: {{customer_utterance: "x"}}
    expected_output:
      expected_items: [{{item_id: {item}, name: X, quantity: 1}}]
    metadata: {{category: simple, difficulty: easy, tier: smoke}}
"""


def problems_for(datasets: Path, text: str) -> str:
    path = write_cases(datasets, text)
    with pytest.raises(DatasetError) as info:
        drive_thru_at(datasets).load_cases()
    message = str(info.value)
    assert str(path) in message
    return message


def test_malformed_yaml_names_file_and_line(datasets):
    message = problems_for(datasets, "cases:\n  - id: a\n    input: {customer_utterance: [\n")
    assert "malformed YAML" in message and "cases.yaml:" in message


def test_duplicate_id(datasets):
    text = "cases:\n" + CASE.format(id="dup", item="hash-brown") * 2
    message = problems_for(datasets, text)
    assert "case 'dup'" in message and "field 'id'" in message and "duplicate" in message


def test_unknown_item_id(datasets):
    message = problems_for(datasets, "cases:\n" + CASE.format(id="c1", item="big-mac"))
    assert "case 'c1'" in message
    assert "field 'expected_output.expected_items.0.item_id'" in message
    assert "'big-mac' is not on the menu" in message


def test_missing_field_and_bad_tier(datasets):
    text = """cases:
  - id: c2
    input: {customer_utterance: "x"}
    expected_output: {expected_items: []}
    metadata: {category: greeting, tier: nightly}
"""
    message = problems_for(datasets, text)
    assert "cases.yaml:2 case 'c2'" in message
    assert "field 'metadata.difficulty'" in message
    assert "field 'metadata.tier'" in message and "'nightly'" in message


def test_unknown_category_and_absence_rule(datasets):
    text = CASE.format(id="c3", item="hash-brown").replace("simple", "greeting")
    text += CASE.format(id="c4", item="hash-brown").replace("simple", "breakfast")
    message = problems_for(datasets, "cases:\n" + text)
    assert "case 'c3'" in message and "greeting cases expect []" in message
    assert "case 'c4'" in message and "unknown category 'breakfast'" in message


def test_jsonl_errors_name_the_line(datasets):
    (datasets / "drive_thru" / "cases.yaml").unlink()
    (datasets / "drive_thru" / "cases.jsonl").write_text('{"id": "ok"}\n{not json\n')
    with pytest.raises(DatasetError) as info:
        drive_thru_at(datasets).load_cases()
    assert "cases.jsonl:2: malformed JSON" in str(info.value)
    assert "cases.jsonl:1 case 'ok'" in str(info.value)


def test_empty_dataset_and_empty_tier(datasets):
    problems_for(datasets, "cases: []\n")
    drive_thru = suite("drive_thru")
    full_only = [c for c in drive_thru.load_cases() if c.tier == "full"]
    with pytest.raises(DatasetError, match="no cases match tier 'smoke'"):
        select_tier(full_only, "smoke")
