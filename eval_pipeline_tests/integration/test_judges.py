"""LLM judges against people: Cohen's kappa (checked by hand), the calibrate command on
the shipped labelled set, bad labelled sets, and the Dagster check that warns."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import instance_for_test, materialize

from eval_pipeline.core.analysis.calibration import CalibrationError, calibrate, load_labels
from eval_pipeline.core.scoring.agreement import cohen_kappa
from eval_pipeline.defs.evaluation.judges import build_judge_calibration
from eval_pipeline.defs.partitions import build_partitions
from eval_pipeline_tests.helpers import (
    EXAMPLES,
    SUITE_NAMES,
    copy_project,
    eval_resources,
    materialized,
    suite,
)

SUITE = "drive_thru_conversations"
BIN = Path(sys.executable).parent


def test_kappa_matches_a_hand_computation():
    # judge/people: 6 pass/pass, 2 pass/fail, 0 fail/pass, 4 fail/fail
    pairs = [(True, True)] * 6 + [(True, False)] * 2 + [(False, False)] * 4
    a = cohen_kappa(pairs)
    # p_o = 10/12; judge passes 8/12, people 6/12: p_e = 8/12·6/12 + 4/12·6/12 = 1/2
    # kappa = (10/12 − 1/2) / (1/2) = 2/3; se = √(p_o(1 − p_o) / (12 · 1/4)) = 0.215166
    assert a.accuracy == pytest.approx(10 / 12, abs=1e-6)
    assert a.kappa == pytest.approx(2 / 3, abs=1e-6)
    se = math.sqrt((10 / 12) * (2 / 12) / (12 * 0.25))
    assert a.kappa_low == pytest.approx(2 / 3 - 1.96 * se, abs=1e-6)  # 0.245
    assert a.kappa_high == 1.0  # 1.088, clipped
    assert (a.both_pass, a.judge_only_pass, a.human_only_pass, a.both_fail) == (6, 2, 0, 4)
    # everyone says pass: chance agreement is 1, kappa is undefined, not 1
    assert cohen_kappa([(True, True)] * 5).kappa is None
    # systematic disagreement is negative
    assert cohen_kappa([(True, False), (False, True)] * 3).kappa == -1.0
    with pytest.raises(ValueError, match="no labelled items"):
        cohen_kappa([])


def test_calibrate_counts_the_judge_calls_and_flags_a_weak_judge(tmp_path):
    done = subprocess.run(
        [str(BIN / "eval-pipeline"), "judge", "calibrate", "--suite", SUITE, "--rubric", "tone",
         "--json", str(tmp_path / "tone.json")],
        cwd=EXAMPLES, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "n=12, accuracy 0.833, Cohen's kappa 0.667 [95% CI 0.245, 1.000]" in done.stdout
    assert "tone-08: judge 0.50, people fail" in done.stdout
    figures = json.loads((tmp_path / "tone.json").read_text())
    assert figures["judge_calls"] == 12 and figures["judge_input_tokens"] > 0
    assert figures["agreement"]["kappa"] == pytest.approx(0.666667)

    weak = calibrate(suite(SUITE), "helpfulness")  # the offline judge passes everything
    assert weak.agreement.kappa == 0.0 and weak.below_floor
    assert {d.id for d in weak.disagreements} >= {"help-03", "help-04"}
    below = subprocess.run(
        [str(BIN / "eval-pipeline"), "judge", "calibrate", "--suite", SUITE, "--rubric",
         "helpfulness"], cwd=EXAMPLES, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert below.returncode == 1 and "AGREEMENT: BELOW FLOOR" in below.stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("labels: 3", "expected a mapping with a 'labels' list"),
        ("labels: [{id: a, rubric: tone, output: x}]", "labels[0]: missing field 'human'"),
        ("labels: [{id: a, rubric: tone, output: x, human: maybe}]",
         "labels[0].human: 'maybe'; use pass or fail"),
        ("labels: [{id: a, rubric: tone, output: x, human: pass},"
         " {id: a, rubric: tone, output: y, human: fail}]", "labels[1].id: 'a' is not a unique id"),
        ("labels: [{", "not valid YAML"),
    ],
)  # fmt: skip
def test_bad_labelled_sets_name_the_file_and_entry(tmp_path, text, message):
    path = tmp_path / "judge_labels.yaml"
    path.write_text(text)
    with pytest.raises(CalibrationError) as raised:
        load_labels(path)
    assert str(path) in str(raised.value) and message in str(raised.value)


def test_unknown_rubric_and_missing_labels_exit_2(tmp_path):
    done = subprocess.run(
        [str(BIN / "eval-pipeline"), "judge", "calibrate", "--suite", SUITE, "--rubric", "wit"],
        cwd=EXAMPLES, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "has no judge named 'wit' (its judges: conciseness, helpfulness, tone)" in done.stderr
    with pytest.raises(CalibrationError, match="no labelled set"):
        calibrate(suite(SUITE), "tone", tmp_path / "none.yaml")


def test_the_agreement_check_warns_for_the_weak_judge(tmp_path):
    project = copy_project(tmp_path)
    resources = eval_resources(tmp_path, project=project)
    asset = build_judge_calibration(build_partitions(SUITE_NAMES), "evaluation")
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = materialize([asset], partition_key=SUITE, instance=instance,
                             resources=resources)  # fmt: skip
        (check,) = result.get_asset_check_evaluations()
        assert not check.passed and check.severity.value == "WARN"
        assert check.description.startswith(f"WARN — {SUITE}: below kappa 0.4: helpfulness; ")
        assert check.metadata["partition"].value == SUITE
        meta = materialized(result, "judge_calibration")
        assert meta["tone kappa"].value == pytest.approx(0.666667)
        assert meta["judge_calls"].value == 32
        # a suite without labelled judges materializes and tests nothing: no result
        # ("Skipped"), never a pass; its metadata says why
        quiet = materialize([asset], partition_key="drive_thru", instance=instance,
                            resources=resources)  # fmt: skip
        assert quiet.get_asset_check_evaluations() == []
        untested = materialized(quiet, "judge_calibration")["checks_not_tested"].value
        assert untested.startswith("- **judge_agreement**: not tested: ")
