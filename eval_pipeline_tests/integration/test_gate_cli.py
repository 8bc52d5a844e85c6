"""The CI gate end to end: baseline vs a worse prompt, a version vs itself, a changed
dataset; the JSON, JUnit and Markdown files; repeats and flaky items."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import clean_cli_env, copy_project


@pytest.fixture
def home(tmp_path, monkeypatch):
    """The CLI on a copy of the project: ``home / "project"`` holds its datasets and prompts."""
    clean_cli_env(monkeypatch, tmp_path / "home", copy_project(tmp_path))
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(main, ["run", "--suite", "drive_thru", *args])


def test_worse_prompt_fails_the_gate_with_evidence_files(home):
    assert run("--prompt-version", "1").exit_code == 0  # the production baseline, full tier
    out = home / "out"
    result = run(
        "--prompt-version",
        "2",
        "--tier",
        "smoke",
        "--baseline",
        "production",
        "--gate",
        "fixed",  # the t-test's evidence: p-values, MDE (the sequential gate has an interval)
        "--json",
        str(out / "r.json"),
        "--junit",
        str(out / "r.xml"),
        "--report",
        str(out / "report.md"),
    )
    assert result.exit_code == 1, result.output
    assert "paired_gate" in result.output and "dt-not-on-menu-01" in result.output
    body = json.loads((out / "r.json").read_text())
    assert body["exit_code"] == 1 and "paired_gate" in body["failed"]
    paired = next(c for c in body["gate"]["checks"] if c["name"] == "paired_gate")
    tool = next(r for r in paired["rows"] if r["metric"] == "tool_call_accuracy")
    assert tool["delta"] < 0 and tool["ci_high"] < 0 and tool["outcome"] == "fail"
    junit = ET.parse(out / "r.xml").getroot()
    items, gates = junit.findall("testsuite")
    assert len(items.findall("testcase")) == 11 and int(items.get("failures")) >= 2
    failed_gates = {
        c.get("name") for c in gates.findall("testcase") if c.find("failure") is not None
    }
    assert "paired_gate" in failed_gates and "binary_gate" not in failed_gates
    report = (out / "report.md").read_text()
    assert "## Regression gate" in report and "### Worst regressions" in report
    assert (out / "report-categories.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "report-trend.png").stat().st_size > 1000


def test_a_version_against_itself_passes(home):
    assert run("--prompt-version", "1").exit_code == 0
    result = run(
        "--prompt-version", "1", "--baseline", "production", "--json", str(home / "r.json")
    )
    assert result.exit_code == 0, result.output
    gate = json.loads((home / "r.json").read_text())["gate"]
    assert gate["outcome"] == "pass" and gate["comparable"]


def test_changed_dataset_is_not_comparable_and_nothing_runs(home):
    assert run("--prompt-version", "1").exit_code == 0
    cases = home / "project" / "datasets" / "drive_thru" / "cases.yaml"
    cases.write_text(cases.read_text().replace("I'll have an Egg McMuffin", "An Egg McMuffin"))
    result = run("--prompt-version", "2", "--baseline", "production")
    assert result.exit_code == 2
    assert "not comparable" in result.output and "dataset changed" in result.output
    store = ResultsStore(f"sqlite:///{home / 'home' / 'results.sqlite'}")
    assert [r.prompt_version for r in store.list_runs(suite="drive_thru")] == ["v1"]


def test_missing_baseline_and_threshold(home):
    result = run("--tier", "smoke", "--baseline", "production")
    assert result.exit_code == 2 and "no complete full-tier run" in result.output
    assert run("--tier", "smoke", "--baseline", "nightly").exit_code == 2
    missed = run("--tier", "smoke", "--threshold", "1.0", "--prompt-version", "2")
    assert missed.exit_code == 1 and "--threshold" in missed.output


def test_repeats_with_temperature_report_flaky_items_deterministically(home, monkeypatch):
    v1 = home / "project" / "prompts" / "drive-thru" / "orchestrator" / "v1.yaml"
    v1.write_text(v1.read_text().replace("temperature: 0.0", "temperature: 1.0"))
    summaries = []
    for _ in range(2):
        out = home / f"r{len(summaries)}.json"
        md = home / f"r{len(summaries)}.md"
        result = run("--tier", "smoke", "--repeat", "3", "--json", str(out), "--report", str(md))
        assert result.exit_code in (0, 1, 3), result.output
        assert "Flaky across repeats: " in result.output  # the CLI names them too
        summaries.append(json.loads(out.read_text())["summary"])
    first, second = summaries
    assert first["repeats"] == 3 and first["flaky_items"]
    assert first["flaky_items"] == second["flaky_items"]
    assert first["metrics"] == second["metrics"] and first["metric_se"] == second["metric_se"]
    assert "## Flaky items" in (home / "r0.md").read_text()
    flaky = first["flaky_items"][0]
    assert len(flaky["values"]) == 3 and flaky["variance"] > 0


def test_a_baseline_run_named_by_id(home):
    """CI names the base commit's run; a run that is not there (or another suite's) is a
    configuration error before any model call."""
    assert run("--prompt-version", "1", "--json", str(home / "base.json")).exit_code == 0
    base_id = json.loads((home / "base.json").read_text())["run"]["run_id"]
    gated = run("--prompt-version", "2", "--tier", "smoke", "--baseline-run", base_id)
    assert gated.exit_code == 1 and f"vs baseline run {base_id}" in " ".join(gated.output.split())
    missing = run("--tier", "smoke", "--baseline-run", "nope")
    assert missing.exit_code == 2 and "baseline run nope is not there" in missing.output


def test_every_run_is_gated_against_the_suites_baseline_label_unasked(home):
    """CLI, API and Dagster decide the baseline one way (evaluation.with_baseline): unasked,
    the suite's regression.baseline_label (production) — a worse version fails the gate."""
    first = run("--prompt-version", "1", "--json", str(home / "first.json"))
    assert first.exit_code == 0, first.output
    body = json.loads((home / "first.json").read_text())
    assert body["gate"] is None and "no baseline yet" in first.output
    worse = run("--prompt-version", "2", "--tier", "smoke", "--json", str(home / "r.json"))
    assert worse.exit_code == 1 and "paired_gate" in worse.output, worse.output
    body = json.loads((home / "r.json").read_text())
    production = json.loads((home / "first.json").read_text())["run"]["run_id"]
    assert body["run"]["baseline_run_id"] == body["gate"]["baseline_run_id"] == production
