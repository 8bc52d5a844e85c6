"""The pytest plugin (eval_pipeline/pytest_plugin.py, docs/running.md "From pytest"): the
examples' suite run by pytest through the plugin alone — no test file — in a copy of the
examples' project outside this repository, as CI runs it (CI=true): a test per case, the
verdict as the session's outcome, one run per suite, and usage errors naming the value.

The plugin is loaded with ``-p eval_pipeline.pytest_plugin``: the shared environment was
installed before the entry point existed (test_the_entry_point_names_the_plugin checks the
declaration; only a fresh install registers it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import CONFIG_ENV, copy_project


@pytest.fixture
def team(tmp_path) -> Path:
    """A copy of the examples' project, outside this repository."""
    return copy_project(tmp_path).parent


def pytest_in(folder: Path, *args: str, ci: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in CONFIG_ENV and not k.startswith(("PYTEST_", "CI"))}  # fmt: skip
    env |= {"EVAL_HOME": str(folder.parent / "home"), "COLUMNS": "200"}
    if ci:
        env["CI"] = "true"
    command = [sys.executable, "-m", "pytest", "-p", "eval_pipeline.pytest_plugin",
               "-p", "no:cacheprovider", *args]  # fmt: skip
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip


def said(ran: subprocess.CompletedProcess) -> str:
    return ran.stdout + ran.stderr


def test_the_examples_suite_runs_as_tests_and_a_worse_prompt_fails_the_session(team):
    # production, the full tier: a test per case and the verdict, one run; it becomes the
    # baseline. In CI the plugin replays; the examples' offline model has nothing to
    # record, so they run live (no endpoint, no key).
    live = ("--eval-suite", "drive_thru", "--eval-recording", "off")
    production = pytest_in(team, *live, "-v")
    assert production.returncode == 0, said(production)
    out = production.stdout
    assert "eval-pipeline.yaml::drive_thru::dt-simple-01 PASSED" in out
    assert "eval-pipeline.yaml::drive_thru::verdict PASSED" in out
    assert "collected 48 items" in out and "48 passed" in out  # 47 cases and the verdict
    assert "drive_thru (run drive_thru-v1-" in out and "VERDICT: PASS (exit 0)" in out
    store = ResultsStore(f"sqlite:///{team.parent / 'home' / 'results.sqlite'}")
    assert len(store.list_runs(suite="drive_thru")) == 1  # one run, not one per case

    # the worse prompt (staging), gated against production: the cases it got worse on
    # fail with why, the verdict fails, its line ends the summary
    gated = (*live, "--eval-label", "staging", "--eval-tier", "smoke",
             "--eval-baseline", "production")  # fmt: skip
    staging = pytest_in(team, *gated)
    assert staging.returncode == 1, said(staging)
    out = staging.stdout
    assert "worse than the baseline: order_correctness 1.0 → 0.0" in out
    assert "FAILED eval-pipeline.yaml::drive_thru::dt-not-on-menu-01" in out
    assert "FAILED eval-pipeline.yaml::drive_thru::verdict" in out
    summary = out[out.index("= eval-pipeline ="):]
    assert "drive_thru (run drive_thru-v2-" in summary
    assert "VERDICT: FAIL — min_mean_scores (exit 1)" in summary

    # the verdict is the session's outcome even when every test that ran passed
    passing = pytest_in(team, *gated, "-k", "dt-simple")
    assert passing.returncode == 1, said(passing)
    assert " passed" in passing.stdout and "failed" not in passing.stdout.splitlines()[-1]
    assert "VERDICT: FAIL — min_mean_scores (exit 1)" in passing.stdout
    assert len(store.list_runs(suite="drive_thru")) == 3


def test_a_bad_suite_option_or_xdist_is_a_usage_error_naming_the_value(team):
    unknown = pytest_in(team, "--eval-suite", "nope", "--eval-recording", "off")
    assert unknown.returncode == 4, said(unknown)  # pytest's usage error
    assert "ERROR: --eval-suite nope: unknown suite" in unknown.stderr
    assert "has no suite 'nope'" in unknown.stderr

    bad = pytest_in(team, "--eval-suite", "drive_thru", "--eval-max-cost", "0")
    assert bad.returncode == 4 and "ERROR: --eval-max-cost 0: 0.0 is not in the range x>0" \
        in bad.stderr  # fmt: skip

    xdist = pytest_in(team, "--eval-suite", "drive_thru", "-n", "2")
    assert xdist.returncode == 4
    assert "--eval-suite: a suite runs once, in one process" in xdist.stderr

    # CI=true replays by default: with no recordings it says so, and how to run live
    replay = pytest_in(team, "--eval-suite", "drive_thru")
    assert replay.returncode == 4, said(replay)
    assert "ERROR: --eval-suite drive_thru: --replay: no recordings at" in replay.stderr
    assert "--eval-recording off runs live" in replay.stderr
    assert not (team.parent / "home" / "results.sqlite").exists() or not ResultsStore(
        f"sqlite:///{team.parent / 'home' / 'results.sqlite'}").list_runs()  # fmt: skip

    # not in CI: live by default
    local = pytest_in(team, "--eval-suite", "drive_thru", "--eval-tier", "smoke", ci=False)
    assert local.returncode == 0, said(local)
    assert "12 passed" in local.stdout


MARKED = """
import pytest


@pytest.mark.eval_suite("drive_thru", tier="smoke", label="staging", recording="off")
def test_drive_thru(result):
    assert result.summary.n_items == 11


@pytest.mark.eval_suite("order_management", tier="smoke", recording="off")
def test_orders(result):
    assert result.summary.n_cases > 5, "our own check"
"""


def test_a_marked_test_function_runs_its_suite_and_then_its_own_assertions(team):
    """A team's test file: each marked function becomes its suite's tests; its body runs
    in the verdict test, given the result, once the verdict passed."""
    (team / "tests").mkdir()
    (team / "tests" / "test_evals.py").write_text(MARKED)
    ran = pytest_in(team, "tests", "-v")
    assert ran.returncode == 1, said(ran)
    out = ran.stdout
    assert "tests/test_evals.py::test_drive_thru::dt-simple-01 PASSED" in out
    assert "FAILED tests/test_evals.py::test_drive_thru::verdict - VERDICT: FAIL" in out
    assert "tests/test_evals.py::test_orders::verdict FAILED" in out
    assert "AssertionError: our own check" in out  # its verdict passed: the body ran
    assert "order_management (run order_management-v1-" in out

    (team / "tests" / "test_evals.py").write_text(MARKED.replace('"order_management"', '"nope"'))
    unknown = pytest_in(team, "tests")
    assert unknown.returncode == 2, said(unknown)  # pytest's collection error
    assert "test_orders: @pytest.mark.eval_suite('nope'): unknown suite" in unknown.stdout
