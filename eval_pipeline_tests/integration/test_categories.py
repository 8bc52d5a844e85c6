"""Categorical scores end to end: an evaluator may answer with a category; the store keeps
it, the report shows each metric's categories as counts, Langfuse gets CATEGORICAL, and
the gate compares the metric by the suite's declared scale (a pass set or an order) —
never by counting a category as 0. Before, a category was an evaluator error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from eval_pipeline import settings
from eval_pipeline.core.scoring.categories import UNDECLARED, CategoryScale, valued
from eval_pipeline.core.scoring.gate import compare_runs
from eval_pipeline.core.scoring.thresholds import Thresholds, ThresholdsError, load_thresholds
from eval_pipeline.core.store.records import ItemOutput, ItemScore
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.integrations.langfuse_scores import item_score_payloads
from eval_pipeline_tests.helpers import clean_cli_env, copy_project
from eval_pipeline_tests.integration.test_langfuse_integration import cli_on
from eval_pipeline_tests.integration.test_verdicts import cli, last_line
from eval_pipeline_tests.langfuse_rules import V3, V4
from eval_pipeline_tests.langfuse_server import LangfuseTestServer
from eval_pipeline_tests.unit.test_gate import record

TONE = '''
from langfuse import Evaluation

from eval_pipeline.evaluators.declare import evaluator


@evaluator(data_type="CATEGORICAL")
def tone(*, output, **_):
    """A team's own evaluator that answers with a category."""
    return Evaluation(name="tone", value={value!r}, data_type="CATEGORICAL")
'''


def scale(**given) -> CategoryScale:
    return CategoryScale.model_validate(given)


def test_a_scale_values_categories_and_names_what_it_cannot_value():
    order = scale(order=["rude", "neutral", "friendly"])
    assert [order.value(c) for c in ("rude", "neutral", "friendly", "odd")] == [0, 0.5, 1, None]
    passing = scale(**{"pass": ["ok"], "values": ["ok", "bad"]})
    assert (passing.value("ok"), passing.value("bad"), passing.binary) == (1.0, 0.0, True)
    raw = [ItemScore("c", 0, "tone", None, data_type="CATEGORICAL", category=c)
           for c in ("friendly", "sarcastic")]  # fmt: skip
    friendly, sarcastic = valued(raw, {"tone": order})
    assert friendly.value == 1.0 and friendly.error_kind is None
    assert sarcastic.value is None and sarcastic.error_kind == UNDECLARED
    assert "tone returned the category 'sarcastic', not one of ['rude'" in sarcastic.comment
    (undeclared,) = valued(raw[:1], {})
    assert undeclared.value is None and "declares no categories for tone" in undeclared.comment


@pytest.mark.parametrize("bad", [
    {"order": ["a"]}, {"order": ["a", "a"]}, {"pass": ["a"]}, {"pass": ["x"], "values": ["a"]},
    {"order": ["a", "b"], "pass": ["a"], "values": ["a", "b"]}, {"order": ["a", "b"], "x": 1},
])  # fmt: skip
def test_a_bad_declaration_is_refused_naming_the_file_and_metric(tmp_path, bad):
    path = tmp_path / "thresholds.yaml"
    path.write_text(yaml.safe_dump({"primary_metric": "m", "categories": {"tone": bad}}))
    with pytest.raises(ThresholdsError) as raised:
        load_thresholds(path)
    assert str(path) in str(raised.value) and "tone" in str(raised.value)


def test_a_pass_set_metric_is_gated_as_pass_fail_by_mcnemar():
    """The fixed gate compares a pass-set categorical metric by McNemar's exact test (its
    p-value), as a BOOLEAN one, not by a t-test on 0/1 numbers it was never given."""
    items = [f"i{n:02d}" for n in range(30)]
    tone = scale(**{"pass": ["ok"], "values": ["ok", "bad"]})

    def run(bad: int):
        said = ["bad" if n < bad else "ok" for n in range(len(items))]
        raw = [ItemScore(i, 0, "tone", None, data_type="CATEGORICAL", category=c)
               for i, c in zip(items, said, strict=True)]  # fmt: skip
        return [ItemOutput(i, 0, {}) for i in items], valued(raw, {"tone": tone})

    gated = Thresholds.model_validate({"primary_metric": "tone", "categories": {
        "tone": {"pass": ["ok"], "values": ["ok", "bad"]}}})  # fmt: skip
    report = compare_runs(record("b"), record("c", agent_version="2"), run(0), run(12), gated,
                          dict.fromkeys(items, "a"))  # fmt: skip
    row = next(c for c in report.checks if c.name == "paired_gate").rows[0]
    assert row.outcome == "fail" and row.p_value is not None and row.p_value < 0.001
    assert row.delta == pytest.approx(-0.4)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    path = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path / "home", path)
    yield path
    sys.modules.pop("team_tone", None)


def with_tone(project: Path, value: str, declared: dict | None) -> None:
    (project.parent / "team_tone.py").write_text(TONE.format(value=value))
    sys.modules.pop("team_tone", None)
    body = yaml.safe_load(project.read_text())
    suite = body["suites"]["drive_thru"]
    if "team_tone:tone" not in suite["evaluators"]:
        suite["evaluators"].append("team_tone:tone")
    project.write_text(yaml.safe_dump(body, sort_keys=False))
    path = project.parent / "datasets" / "drive_thru" / "thresholds.yaml"
    thresholds = yaml.safe_load(path.read_text())
    thresholds.pop("categories", None)
    if declared is not None:
        thresholds["categories"] = {"tone": declared}
    path.write_text(yaml.safe_dump(thresholds, sort_keys=False))


def test_a_team_evaluator_that_answers_with_a_category(project, tmp_path):
    with_tone(project, "friendly", {"order": ["rude", "neutral", "friendly"]})
    out = tmp_path / "run.json"
    ran = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--json", str(out))
    assert ran.exit_code == 0, ran.output
    body = json.loads(out.read_text())
    items = body["summary"]["n_items"]
    assert body["summary"]["categories"] == {"tone": {"friendly": items}}
    assert body["summary"]["metrics"]["tone"] == 1.0  # its worth on the declared order
    assert f"Categories of tone: friendly {items}" in ran.output
    stored = ResultsStore(settings.results_url()).read_scores(body["run"]["run_id"])
    tones = [s for s in stored if s.evaluator == "tone"]
    assert {(s.category, s.data_type, s.value) for s in tones} == {
        ("friendly", "CATEGORICAL", 1.0)}  # fmt: skip
    sent = item_score_payloads(body["run"]["run_id"], tones)
    assert {(p["value"], p["dataType"]) for p in sent.values()} == {("friendly", "CATEGORICAL")}

    # a category the order does not list: an error of the evaluator, named, never a 0
    with_tone(project, "sarcastic", {"order": ["rude", "neutral", "friendly"]})
    odd = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--cache", "off")
    text = " ".join(odd.output.split())
    assert "tone returned the category 'sarcastic', not one of" in text
    # undeclared, and the gate reads it: the verdict cannot be known
    with_tone(project, "friendly", None)
    thresholds = project.parent / "datasets" / "drive_thru" / "thresholds.yaml"
    body = yaml.safe_load(thresholds.read_text())
    body.setdefault("min_mean", {})["tone"] = 0.5
    thresholds.write_text(yaml.safe_dump(body, sort_keys=False))
    gated = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--cache", "off")
    assert gated.exit_code == 2, gated.output
    assert "declares no categories for tone" in last_line(gated.output)


@pytest.mark.parametrize("version", [V3, V4], ids=lambda v: f"langfuse-{v.version}")
def test_langfuse_gets_categorical_scores_with_their_config(version, project, monkeypatch,
                                                            tmp_path):  # fmt: skip
    """The category goes to Langfuse as a CATEGORICAL score naming a config that lists the
    scale's categories (created on the first run, matched on the next); every score names
    its config, and the server keeps them all (one violating its config would be dropped)."""
    with_tone(project, "friendly", {"order": ["rude", "neutral", "friendly"]})
    with cli_on(version, monkeypatch, tmp_path) as srv:
        monkeypatch.setenv("EVAL_PROJECT", str(project))
        ran = cli("run", "--suite", "drive_thru", "--tier", "smoke")
        assert ran.exit_code == 0, ran.output
        srv.settle()
        tones = [s for s in srv.state.scores if s["name"] == "tone"]
        assert tones and {(s["value"], s["dataType"]) for s in tones} == {
            ("friendly", "CATEGORICAL")}  # fmt: skip
        config = srv.state.score_configs[tones[0]["configId"]]
        assert [c["label"] for c in config["categories"]] == ["rude", "neutral", "friendly"]
        types = {srv.state.score_configs[s["configId"]]["dataType"]
                 for s in srv.state.scores if s.get("traceId")}  # fmt: skip
        assert types == {"NUMERIC", "BOOLEAN", "CATEGORICAL"} and not srv.state.dropped_scores
        created = len(srv.state.score_configs)
        again = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--cache", "off")
        assert again.exit_code == 0, again.output
        srv.settle()
        assert len(srv.state.score_configs) == created  # matched, not made again


def test_the_test_server_keeps_to_score_configs_as_langfuse_does():
    import httpx

    with LangfuseTestServer(version=V4) as srv:
        auth = (srv.public_key, srv.secret_key)

        def post(path: str, body: dict) -> httpx.Response:
            return httpx.post(f"{srv.base_url}/api/public/{path}", json=body, auth=auth)

        bad = [{"name": "t", "dataType": "CATEGORICAL"},
               {"name": "t", "dataType": "CATEGORICAL",
                "categories": [{"label": "a", "value": 0}, {"label": "a", "value": 1}]},
               {"name": "t", "dataType": "NUMERIC", "minValue": 1, "maxValue": 1},
               {"name": "t", "dataType": "BOOLEAN", "categories": []}]  # fmt: skip
        assert [post("score-configs", b).status_code for b in bad] == [400] * 4
        made = post("score-configs", {"name": "tone", "dataType": "CATEGORICAL",
                                      "categories": [{"label": "ok", "value": 1}]})  # fmt: skip
        config = made.json()["id"]
        for value in ("ok", "odd"):
            post("scores", {"name": "tone", "value": value, "dataType": "CATEGORICAL",
                            "traceId": "t1", "configId": config})  # fmt: skip
        post("scores", {"name": "x", "value": 1.0, "traceId": "t1", "configId": "nope"})
        srv.settle()
        assert [s["value"] for s in srv.state.scores] == ["ok"]
        assert [why for _, why in srv.state.dropped_scores] == [
            "Value odd does not map to a valid category. Pass a valid category value.",
            "The configId you provided does not match a valid config in this project",
        ]
