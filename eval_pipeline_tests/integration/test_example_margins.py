"""The examples gate what their suites can decide (issue 44, item 8).

Teams copy the example suites. At the default margin of 0.02 a suite needs 174 tied pairs
to be called NOT WORSE, and the examples have 22–47 cases: a copy of the production prompt
under a new version ended UNDECIDED after every pair, so an unchanged prompt's nightly was
red under ``on_undecided: fail``. Each example now sets a margin its cases decide with a
case or two that flip (core/scoring/margins.py, docs/gate.md "Choosing a margin")."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from eval_pipeline.core.scoring.margins import advised_margin, cases_for_margin, shown, table
from eval_pipeline.core.scoring.sequential import Decision, finest_margin, first_decision
from eval_pipeline_tests.helpers import SUITE_NAMES, suite
from eval_pipeline_tests.integration.test_verdicts import cli

ALPHA = 0.05
# The examples whose offline behaviour slips now and then above temperature 0 (a miscount,
# a skipped lookup, a field left out): their copy is not tied on every case.
SLIPS = {"drive_thru", "drive_thru_conversations", "product_discovery"}


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_every_example_margin_is_one_its_suite_decides_with_room_for_flips(name):
    example = suite(name)
    cases, regression = len(example.load_cases()), example.thresholds.regression
    finest = finest_margin(cases, regression.alpha)
    advised = advised_margin(cases, regression.alpha)
    assert regression.margin >= finest, (name, cases, regression.margin, finest)
    assert regression.margin >= advised, (
        f"{name}: margin {regression.margin} on {cases} cases; with room for a case that "
        f"flips each way it can be no finer than {advised:.3f} (nothing moved: {finest:.3f})"
    )
    assert cases_for_margin(regression.margin, regression.alpha) <= cases


def test_the_advised_margin_decides_a_suite_with_a_flip_each_way():
    """What the rule promises (core/scoring/margins.py): at the advised margin, n pairs of
    which one got worse by a full point and one better, the rest tied, are NOT WORSE by
    the last pair whatever their order (from 7 cases on); and the table init and the docs
    print is it."""
    for n in range(7, 401):
        margin = advised_margin(n, ALPHA)
        flips = [-1.0, 1.0] + [0.0] * (n - 2)
        for pairs in (flips, flips[::-1], flips[1:] + flips[:1]):
            said, at = first_decision(np.array(pairs), margin=margin, alpha_not_worse=ALPHA,
                                      alpha_worse=ALPHA)  # decide()'s decision  # fmt: skip
            assert said is Decision.NOT_WORSE, (n, margin, pairs[:2], said, at)
        assert finest_margin(n, ALPHA) < margin <= finest_margin(n // 2, ALPHA)
    for n, finest, advised in table(ALPHA):
        assert float(finest) == pytest.approx(finest_margin(n, ALPHA), abs=5e-4)
        assert advised == shown(advised_margin(n, ALPHA))
        assert (
            cases_for_margin(float(advised), ALPHA)
            <= n
            < cases_for_margin(float(advised) - 0.01, ALPHA)
        )  # (the advised margin, to 0.01, is the finest those cases gate)


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_a_copy_of_the_production_prompt_passes_every_examples_gate(project, tmp_path, name):
    """The production prompt copied as a new version, sampled at temperature 0.3 (so the
    offline model slips on a few cases, as a real model's copy would), gated against
    production on the full tier: PASS, every gated metric decided NOT WORSE — neither
    UNDECIDED (what every example said at the old margin of 0.02) nor UNCHANGED."""
    prompt_name = suite(name).prompt_name
    assert prompt_name is not None
    production = cli("run", "--suite", name, "--tier", "full", "--json",
                     str(tmp_path / "production.json"))  # fmt: skip
    assert production.exit_code == 0, production.output
    copy = yaml.safe_load((project.parent / "prompts" / prompt_name / "v1.yaml").read_text())
    copy["config"]["temperature"] = 0.3
    (tmp_path / "copy.yaml").write_text(yaml.safe_dump(copy, sort_keys=False))
    added = cli("prompts", "add", prompt_name, str(tmp_path / "copy.yaml"), "--label", "copy")
    assert added.exit_code == 0, added.output
    gated = cli("run", "--suite", name, "--tier", "full", "--label", "copy", "--baseline",
                "production", "--json", str(tmp_path / "copy.json"))  # fmt: skip
    body = json.loads((tmp_path / "copy.json").read_text())
    assert (gated.exit_code, body["verdict"]) == (0, "PASS"), gated.output
    paired = next(c for c in body["gate"]["checks"] if c["name"] == "paired_gate")
    assert paired["result"] == "PASS" and not paired["description"].startswith("UNCHANGED")
    assert paired["description"].count("not worse") == paired["description"].count("pairs:")
    before = json.loads((tmp_path / "production.json").read_text())["items"]
    scores = {item["item_id"]: item["scores"] for item in before}
    moved = [item["item_id"] for item in body["items"] if item["scores"] != scores[item["item_id"]]]
    assert bool(moved) == (name in SLIPS), moved  # not a tie on every case where it can slip
