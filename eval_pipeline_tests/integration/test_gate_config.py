"""Every name a gate reads that could blind it, refused with exit 2 (issue 44, item 3):
checked from outside, on the team project of test_wrong_passes (a callable agent adding
two numbers; v3 of its prompt is wrong on half of 200 cases), run through the CLI.

- a baseline label no prompt in the registry carries (the thresholds' or ``--baseline``):
  every run had "no baseline" and passed; a label another prompt carries but this one does
  not yet, or the default ``production`` not set yet, stays "no baseline yet";
- a category floor on a category no case has: it floored nothing.

A watched label or a label in prompts/labels.yaml outside Langfuse's rule, and an absence
category the suite does not declare, are rows of bad_inputs/setups (test_bad_inputs.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from eval_pipeline_tests.helpers import in_team_project
from eval_pipeline_tests.integration.test_wrong_passes import last_line, run, write_project

THRESHOLDS = {"primary_metric": "completeness", "min_mean": {"completeness": 0.4},
              "regression": {"margin": 0.1, "pass_threshold": 1.0}}  # fmt: skip


@pytest.fixture
def team(tmp_path, monkeypatch) -> Iterator[Path]:
    project = write_project(tmp_path / "team")
    with in_team_project(tmp_path, monkeypatch, project, "summing") as root:
        yield root


def said(done) -> str:
    return " ".join(done.output.split())


def thresholds(team: Path, **regression) -> Path:
    path = team / "evals" / "summing" / "thresholds.yaml"
    body = {**THRESHOLDS, "regression": {**THRESHOLDS["regression"], **regression}}
    path.write_text(yaml.safe_dump(body))
    return path


def test_a_misspelt_baseline_label_in_the_thresholds_is_refused(team):
    """``baseline_label: prodution``: no baseline for any run, so v3 (wrong on half the
    cases) printed "no baseline" and VERDICT: PASS (exit 0). Now exit 2 before anything
    runs, naming the file, the field, the value, the labels there are and what to do."""
    assert run("--prompt-version", "1").exit_code == 0
    path = thresholds(team, baseline_label="prodution")
    done = run("--prompt-version", "3")
    text = said(done)
    assert done.exit_code == 2, done.output
    assert f"{path}: field 'regression.baseline_label': 'prodution'" in text
    assert "no prompt in the registry carries it (labels: production)" in text
    assert "did you mean 'production'?" in text
    assert "eval-pipeline prompts label summing/assistant VERSION prodution" in text
    assert "ERROR" in last_line(done)


def test_a_baseline_option_no_prompt_carries_names_the_option_and_the_labels(team):
    """``--baseline prodution`` was refused (exit 2) with "label a prompt version first",
    which sent the team to label a version with the typo; now it names the option, the
    value and the labels there are."""
    done = run("--prompt-version", "3", "--baseline", "prodution")
    text = said(done)
    assert done.exit_code == 2, done.output
    assert "--baseline / baseline_label 'prodution': prompt summing/assistant has no label" in text
    assert "no prompt in the registry carries it (labels: production)" in text
    assert "did you mean 'production'?" in text


def test_a_label_other_prompts_carry_is_no_baseline_yet_not_an_error(team):
    """A new suite's prompt has no label yet that the project's other prompts carry: its
    first runs have no baseline (a gate note), they are not refused. Likewise the default
    ``production``, written out as ``init`` writes it, in a registry with no label at all."""
    labels = team / "prompts" / "labels.yaml"
    labels.write_text("summing/assistant:\n  production: 1\nother/prompt:\n  canary: 4\n")
    thresholds(team, baseline_label="canary")
    done = run("--prompt-version", "3", "--tier", "smoke")
    assert done.exit_code == 0, done.output
    assert "has no label 'canary': no baseline" in said(done)
    labels.write_text("{}\n")
    thresholds(team, baseline_label="production")
    done = run("--prompt-version", "3", "--tier", "smoke")
    assert done.exit_code == 0, done.output
    assert "has no label 'production': no baseline" in said(done)


def test_a_category_floor_no_case_has_is_refused(team):
    """The suite declares no categories, so a floor on a misspelt one floored nothing
    (its check "passed"); now exit 2, naming the file, the field, the value and the
    categories the cases have."""
    path = team / "evals" / "summing" / "thresholds.yaml"
    path.write_text(
        yaml.safe_dump({**THRESHOLDS, "category_floors": {"completeness": {"summ": 0.9}}})
    )
    done = run("--prompt-version", "1", "--tier", "smoke")
    text = said(done)
    assert done.exit_code == 2, done.output
    assert (
        f"{path}: field 'category_floors.completeness': 'summ' is not the category of "
        "any case of the suite (its cases' categories: sum)"
    ) in text
    assert "did you mean 'sum'?" in text


def test_a_registry_out_of_reach_stays_a_gate_note(team, monkeypatch):
    """Whether anyone carries a label cannot be told while the registry is out of reach:
    the run keeps today's note ("baseline unknown"), neither refused nor gated; asked for
    with --baseline, it is an error, as before."""
    from eval_pipeline.integrations.prompt_registry import (
        LocalPromptRegistry,
        RegistryUnavailable,
    )

    def down(self, labels):
        raise RegistryUnavailable("labels: connection refused")

    monkeypatch.setattr(LocalPromptRegistry, "label_versions", down)
    thresholds(team, baseline_label="prodution")
    done = run("--prompt-version", "3", "--tier", "smoke")
    assert done.exit_code == 0, done.output
    assert "baseline unknown: prompt registry unavailable" in said(done)
    asked = run("--prompt-version", "3", "--tier", "smoke", "--baseline", "prodution")
    assert asked.exit_code == 2 and "connection refused" in said(asked), asked.output
