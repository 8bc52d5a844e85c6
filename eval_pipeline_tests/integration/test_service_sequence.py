"""One sequence of a run, in service/ (issue 45 item 1): the rules that lived in one driver
(absence_coverage in Dagster, --threshold in the CLI, abandonment decided twice) run the
same through both drivers (``DRIVERS``), and a run on production failures is a run request
the service sequences like any other."""

from __future__ import annotations

import socket
from dataclasses import replace
from datetime import date

import pytest
import yaml

from eval_pipeline import service
from eval_pipeline.agents.project import load_project
from eval_pipeline.core.evaluation import FAILURES_TIER
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.scoring import checks
from eval_pipeline.core.store.records import RunStatus
from eval_pipeline.core.traces.observations import parse_observation, score_traces
from eval_pipeline.core.traces.rerun import (
    FAILED_IN_PRODUCTION,
    failure_cases,
    primary_of,
    rerun_report,
    score_rerun,
)
from eval_pipeline.service import Environment, RunRequest
from eval_pipeline_tests.drivers import DRIVERS, drive
from eval_pipeline_tests.helpers import clean_cli_env, copy_project
from eval_pipeline_tests.integration.test_failure_rerun import BLIND_ADD, CORRECTED, FINE


def test_absence_coverage_and_threshold_are_registered_checks():
    """Both are declared once in the registry, blocking, so both drivers run them."""
    for name in ("absence_coverage", "threshold"):
        declared = checks.spec(name)
        assert declared is not None and declared.kind == "threshold" and declared.blocking


@pytest.mark.parametrize("driver", DRIVERS)
def test_threshold_blocks_in_both_drivers(driver, tmp_path, monkeypatch):
    """--threshold (min_primary) fails the run in either driver, and the verdict stored
    says so; before, Dagster skipped the check by name (no check result showed it)."""
    project = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path, project)
    done = drive(driver, tmp_path, project, "drive_thru", 2, tier="smoke", min_primary=1.0)
    said = done.store.read_verdict(done.run_id)
    assert done.verdict == said.verdict == "FAIL" and "threshold" in said.reason
    if driver == "dagster":
        found = done.checks["threshold"]
        assert not found.passed and "--threshold 1.0" in found.description


@pytest.mark.parametrize("driver", DRIVERS)
def test_absence_coverage_blocks_in_both_drivers(driver, tmp_path, monkeypatch):
    """A suite whose cases too rarely expect the agent to do nothing (greeting only: 5 of
    47) fails in either driver; before, only Dagster's golden_dataset checked it."""
    project = copy_project(tmp_path)
    body = yaml.safe_load(project.read_text())
    body["suites"]["drive_thru"]["absence_categories"] = ["greeting"]
    project.write_text(yaml.safe_dump(body, sort_keys=False))
    clean_cli_env(monkeypatch, tmp_path, project)
    done = drive(driver, tmp_path, project, "drive_thru", 1, tier="smoke")
    said = done.store.read_verdict(done.run_id)
    assert done.verdict == said.verdict == "FAIL" and "absence_coverage" in said.reason
    if driver == "dagster":
        found = done.checks["absence_coverage"]
        assert not found.passed and "11% of the cases expect nothing" in found.description


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_run_whose_driver_ended_is_abandoned_by_either_driver(driver, tmp_path, monkeypatch):
    """The next run of either driver marks abandoned a run whose process ended (in-process
    runs) and, in Dagster, one whose Dagster run ended; decided once (service.abandon_ended),
    the status the same either way (before: "failed" in Dagster, "abandoned" in the CLI)."""
    project = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path, project)
    first = drive(driver, tmp_path, project, "drive_thru", 1, tier="smoke")
    store, run = first.store, first.store.get_run(first.run_id)
    dead_process = replace(run, run_id="dead-process", status=RunStatus.RUNNING,
                           owner=f"{socket.gethostname()}:999999999:1", dagster_run_id=None)
    dead_dagster = replace(run, run_id="dead-dagster", status=RunStatus.RUNNING, owner=None,
                           dagster_run_id="0" * 36)  # (a run this instance never had)
    for record in (dead_process, dead_dagster):
        store.create_run(record)
    drive(driver, tmp_path, project, "drive_thru", 1, tier="smoke")
    assert store.get_run("dead-process").status == RunStatus.ABANDONED
    expected = RunStatus.ABANDONED if driver == "dagster" else RunStatus.RUNNING
    assert store.get_run("dead-dagster").status == expected  # (only Dagster knows its runs)


def test_a_failures_run_is_a_run_request_the_service_sequences(tmp_path, monkeypatch):
    """RunRequest.failures through run_in_process: a complete run of tier "failures" with
    no verdict stored and no baseline, its scores those of score_rerun, each naming the
    failure it tests, and its report read off the stored scores."""
    project = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path, project)
    env = Environment.from_env(project)
    suite = load_project(project).suite("drive_thru")
    records = [parse_observation(o) for o in (BLIND_ADD, CORRECTED, FINE)]
    cases = failure_cases(records, score_traces(records, suite.trace_evaluators),
                          date(2026, 11, 21))  # fmt: skip
    request = RunRequest("drive_thru", RunOptions(shards=1), 2, failures=tuple(cases))
    finished = service.run_in_process(service.prepare(env, request))
    result, store = finished.result, env.store()
    run = store.get_run(result.run.run_id)
    assert run.tier == FAILURES_TIER and run.status == RunStatus.COMPLETE
    assert run.baseline_run_id is None and store.read_verdict(run.run_id) is None
    stored = store.read_scores(run.run_id)
    report, expected = score_rerun(cases, result.outputs, suite.trace_evaluators,
                                   primary_of(suite))  # fmt: skip
    assert sorted((s.item_id, s.evaluator, s.value) for s in stored) == sorted(
        (s.item_id, s.evaluator, s.value) for s in expected)  # fmt: skip
    assert all(s.metadata[FAILED_IN_PRODUCTION] for s in stored)
    assert rerun_report(cases, result.outputs, stored) == report
    assert report.line() == "fixes 1 of 2 production failures, 1 still fail"


def test_a_passing_absence_coverage_gates_nothing_about_the_agent():
    """absence_coverage tests the suite's cases: a run whose only tested blocking check is
    it still says that nothing was gated (as before it ran in every run)."""
    from eval_pipeline.core.evaluation import EvalResult
    from eval_pipeline.core.scoring.checks import CheckOutcome, ThresholdCheck
    from eval_pipeline.core.scoring.thresholds import Thresholds
    from eval_pipeline.core.store.records import RunRecord

    run = RunRecord("r", "s", "p", "v1", "h", "d", "m", "smoke")
    dataset = ThresholdCheck("absence_coverage", CheckOutcome(True, "30% expect nothing"), True)
    result = EvalResult(run, None, [dataset], Thresholds.model_validate(
        {"primary_metric": "quality"}), [], [], gate_note="no baseline yet")  # fmt: skip
    assert result.ungated and result.ungated.startswith("nothing was gated (no baseline yet")
    agent = ThresholdCheck("min_mean_scores", CheckOutcome(True, "all means at minimum"), True)
    result.checks.append(agent)
    assert result.ungated is None
