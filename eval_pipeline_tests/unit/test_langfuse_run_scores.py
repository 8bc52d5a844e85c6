"""The run's own scores sent to Langfuse, and how the CLI names where they went."""

from __future__ import annotations

from eval_pipeline.core.scoring.summary import RunEvaluation
from eval_pipeline.core.store.records import Verdict, VerdictRecord
from eval_pipeline.integrations.langfuse_experiments import Linked, RunVerdict
from eval_pipeline.integrations.langfuse_scores import run_score_payloads, score_id

FAIL = VerdictRecord("run-2", Verdict.FAIL, "paired_gate", "order_correctness", -0.1234,
                     -0.2, -0.05, "run-1")  # fmt: skip


def test_means_run_evaluators_and_the_verdict_are_the_runs_own_scores():
    sent = run_score_payloads(
        "run-2", {"order_correctness": 0.8, "latency": None},
        evaluations={"avg_order_correctness": RunEvaluation(0.8, "mean of 11"),
                     "broken": RunEvaluation(None, "error: boom")},
        verdict=RunVerdict(FAIL, 0.05), dataset_run_id="exp-2", environment="sdk-experiment",
    )  # fmt: skip
    by_name = {p["name"]: p for p in sent.values()}
    assert set(by_name) == {"run_order_correctness", "avg_order_correctness", "verdict",
                            "verdict_delta", "verdict_margin"}  # fmt: skip
    # the means keep the ids they had: re-sent, they are upserted, not doubled
    assert by_name["run_order_correctness"]["id"] == score_id("run-2", "run", "order_correctness")
    assert all(p["datasetRunId"] == "exp-2" and p["environment"] == "sdk-experiment"
               for p in sent.values())  # fmt: skip
    assert by_name["avg_order_correctness"]["comment"] == "mean of 11"
    verdict = by_name["verdict"]
    assert (verdict["dataType"], verdict["value"]) == ("CATEGORICAL", "FAIL")
    assert verdict["comment"] == ("FAIL: paired_gate — order_correctness Δ -0.123 "
                                  "[-0.200, -0.050]; margin 0.05; baseline run run-1")  # fmt: skip
    assert by_name["verdict_delta"]["value"] == -0.123
    assert by_name["verdict_margin"]["value"] == 0.05
    assert verdict["metadata"]["verdict_interval"] == "[-0.200, -0.050]"


def test_an_ungated_run_sends_its_verdict_alone_on_its_session_when_unlinked():
    ungated = RunVerdict(VerdictRecord("run-1", Verdict.PASS, ""))
    (verdict,) = run_score_payloads("run-1", {}, verdict=ungated).values()
    assert (verdict["name"], verdict["value"]) == ("verdict", "PASS")
    assert verdict["sessionId"] == "run-1"
    assert verdict["comment"] == "PASS" and "datasetRunId" not in verdict


def test_the_cli_names_the_experiment_once():
    url = "http://lf/project/p/experiments/results?baseline=b&c=c"
    assert Linked("c", url=url, compared=True).line() == (
        f"experiment c (compared with its baseline's: {url})")  # fmt: skip
    assert Linked("r").line() == "dataset run r"  # v3: no experiment view
    assert Linked(None, "HTTP 503").line() == "experiment not linked: HTTP 503"
