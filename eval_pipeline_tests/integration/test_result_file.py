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


def test_every_surface_renders_the_results_file_alone(tmp_path):
    """One view model (issue 45 item 2): the CLI report's checks and gate, Markdown,
    JUnit, Dagster's check results and failure message render the results file, so the
    file read back (what `eval-pipeline comment` reads) renders each of them the same,
    byte for byte, on the verdict properties' edge cases (UNDECIDED, ERROR, FAIL, PASS;
    sequential and fixed gates)."""
    import io

    from rich.console import Console

    from eval_pipeline.cli.report import print_gate, print_report
    from eval_pipeline.core.reports.exports import write_junit, write_markdown
    from eval_pipeline.defs.evaluation.asset_checks import (
        CheckedPartition,
        check_results,
        verdict_message,
    )
    from eval_pipeline_tests.integration.test_verdict_properties import EDGES, make_runs, verdict_of

    def surfaces(view: ResultFile, folder: Path) -> list[str]:
        console = Console(file=io.StringIO(), record=True, width=3000, color_system=None)
        print_report(console, view)
        print_gate(console, view.gate, view.gate_note)
        folder.mkdir()
        partition = CheckedPartition("s", "2")
        checks, skipped = check_results(view, partition)
        return [console.export_text(), write_junit(folder / "r.xml", view).read_text(),
                write_markdown(folder / "r.md", view).read_text(),
                repr([(c.check_name, c.passed, c.severity, c.description, c.metadata)
                      for c in checks]), repr(skipped),
                verdict_message(view, partition)]  # fmt: skip

    verdicts = set()
    for i, spec in enumerate(EDGES):
        view = ResultFile.of(verdict_of(make_runs(spec)))
        verdicts.add(view.verdict)
        back = ResultFile.model_validate_json(view.model_dump_json())
        assert surfaces(back, tmp_path / f"{i}-back") == surfaces(view, tmp_path / f"{i}")
    assert len(verdicts) >= 3, verdicts  # (the edges reach several verdicts)


def test_each_row_says_its_numbers_and_the_check_only_collects_them():
    """A row's numbers are under labels naming its metric or category, rounded once there
    (Δ to 3 places, as every surface shows it); a decided check shows no cases needed; a
    row of an item below 1.0 says which item it fails, and why."""
    from eval_pipeline.core.reports.result_file import CheckResult, GateCheckResult
    from eval_pipeline.core.scoring.rows import FloorRow, ItemBelowRow, PairedRow, signed

    paired = PairedRow(metric="quality", category="a", n=12, delta=-0.50851, ci_low=-0.61,
                       ci_high=-0.4, p_value=0.001, p_holm=0.002, mde=0.1, decision="fail",
                       outcome="warn", cases_needed=40, note="")  # fmt: skip
    assert paired.numbers() == {"a Δ": -0.509, "a n": 12, "a CI": "[-0.610, -0.400]",
                                "a p (Holm)": 0.002, "a cases needed in all": 40}  # fmt: skip
    assert "a cases needed in all" not in paired.numbers(settled=True)
    assert paired.delta_text == signed(-0.50851) == "-0.509"
    gate = GateCheckResult(name="category_deltas", result="PASS", outcome="pass", tested=True,
                           description="", rows=[paired])  # fmt: skip
    assert "a cases needed in all" not in gate.numbers()
    floor = FloorRow(metric="quality", category="b", mean=0.5, floor=0.6, ok=False)
    below = ItemBelowRow(metric="safe", item_id="c-1", repeat=0, value=0.0, comment="said no")
    check = CheckResult(name="all_items_pass", result="FAIL", passed=False, blocking=True,
                        description="", rows=[below])  # fmt: skip
    assert floor.numbers() == {"b quality mean": 0.5, "b quality floor": 0.6}
    assert check.numbers() == {"items below 1.0": 1}
    assert below.item_failure() == ("c-1", "safe: said no") and floor.item_failure() is None
