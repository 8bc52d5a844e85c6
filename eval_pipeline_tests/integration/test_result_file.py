"""The results file (`--json`) is a typed, versioned document: every row says its kind, the
file reads back into the model, and the JSON Schema published in the docs is the model's."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline.core.reports.result_file import SCHEMA_VERSION, ResultFile, json_schema
from eval_pipeline_tests.helpers import clean_cli_env, copy_project

PUBLISHED = Path(__file__).resolve().parents[2] / "docs" / "result.schema.json"


def test_the_published_schema_is_the_models():
    assert PUBLISHED.read_text(encoding="utf-8") == json_schema(), (
        "docs/result.schema.json is stale: "
        "python -m eval_pipeline.core.reports.result_file > docs/result.schema.json"
    )


def test_json_is_the_typed_result_with_its_schema_version(tmp_path, monkeypatch):
    clean_cli_env(monkeypatch, tmp_path / "home", copy_project(tmp_path))
    runner = CliRunner()
    assert (
        runner.invoke(main, ["run", "--suite", "drive_thru", "--prompt-version", "1"]).exit_code
        == 0
    )
    out = tmp_path / "r.json"
    args = ["run", "--suite", "drive_thru", "--prompt-version", "2", "--tier", "smoke",
            "--gate", "fixed", "--json", str(out)]  # fmt: skip
    assert runner.invoke(main, args).exit_code == 1
    text = out.read_text(encoding="utf-8")
    body = json.loads(text)
    assert body["schema_version"] == SCHEMA_VERSION == 2
    parsed = ResultFile.model_validate_json(text)  # reads back into the model, nothing lost
    assert parsed.model_dump(mode="json") == body
    paired = next(c for c in parsed.gate.checks if c.name == "paired_gate")
    assert {r.kind for r in paired.rows} == {"paired"} and paired.result == "FAIL"
    assert paired.worse_items and paired.worse_items[0].baseline > paired.worse_items[0].candidate
    kinds = {r["kind"] for c in body["checks"] for r in c["rows"]}
    assert kinds <= {"mean", "item_below", "floor", "primary_floor"} and "mean" in kinds
    assert body["run"]["baseline_run_id"] == parsed.gate.baseline_run_id
