"""Production failures run again with a candidate: a trace with a known failure becomes a
case; a prompt that fixes it scores it fixed, one that does not still fails; the trace id
travels with the case into the report (and onto the trace in Langfuse, tested there)."""

from __future__ import annotations

import json
from datetime import date

import yaml
from dagster import MultiPartitionKey, instance_for_test, materialize

from eval_pipeline.core.running.runner import RunnerConfig, run_agent_sync
from eval_pipeline.core.store.baselines import find_baseline
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.traces.observations import parse_observation, score_traces
from eval_pipeline.core.traces.rerun import (
    CORRECTION,
    failure_cases,
    latest_failures,
    score_rerun,
    write_failures,
)
from eval_pipeline.defs.evaluation.failure_rerun import build_failure_rerun
from eval_pipeline.defs.partitions import EvalPartition, add_partitions, build_partitions
from eval_pipeline.defs.traces.assets import build_trace_assets
from eval_pipeline.evaluators.declare import evaluator_name
from eval_pipeline_tests.helpers import SUITE_NAMES, agent, eval_resources, materialized, suite

DAY = date(2026, 11, 21)
BLIND_ADD = {  # production added without looking the item up: tool_protocol fails
    "id": "obs-blind", "traceId": "a" * 32, "name": "drive-thru-agent",
    "startTime": "2026-11-21T07:00:00Z",
    "input": json.dumps({"customer_utterance": "Can I get a Hash Brown"}),
    "output": json.dumps({"current_order": {"items": [{"item_id": "hash-brown",
                          "name": "Hash Brown", "quantity": 1}]},
                          "tools_called": ["add_item_to_order"]}),
    "metadata": {"category": "simple"},
}  # fmt: skip
CORRECTED = {  # the order was fine by the evaluators, but the customer wanted two
    **BLIND_ADD, "id": "obs-corrected", "traceId": "b" * 32,
    "input": json.dumps({"customer_utterance": "Two hash browns please"}),
    "output": json.dumps({"current_order": {"items": [{"item_id": "hash-brown",
                          "name": "Hash Brown", "quantity": 1}]},
                          "tools_called": ["lookup_menu_item", "add_item_to_order"]}),
    "metadata": {"category": "quantity", "user_feedback": {"corrected_items": [
        {"item_id": "hash-brown", "name": "Hash Brown", "quantity": 2}]}},
}  # fmt: skip
FINE = {**CORRECTED, "id": "obs-fine", "traceId": "c" * 32, "metadata": {"category": "simple"}}


def rerun(version: int) -> tuple:
    drive_thru = suite("drive_thru")
    records = [parse_observation(o) for o in (BLIND_ADD, CORRECTED, FINE)]
    cases = failure_cases(records, score_traces(records, drive_thru.trace_evaluators), DAY)
    outputs = run_agent_sync(agent("drive_thru", version), cases, RunnerConfig(max_attempts=1))
    primary = next(f for f in drive_thru.evaluators if evaluator_name(f) == "order_correctness")
    return cases, score_rerun(cases, outputs, drive_thru.trace_evaluators, primary)[0]


def test_failed_and_corrected_traces_become_cases_with_their_trace_ids():
    cases, _ = rerun(1)
    assert [c.metadata.model_dump()["trace_id"] for c in cases] == ["a" * 32, "b" * 32]
    blind, corrected = cases
    assert blind.id == "failure-" + "a" * 32
    assert blind.input == {"customer_utterance": "Can I get a Hash Brown"}
    assert blind.metadata.model_dump()["failed"] == ["tool_protocol"]
    assert blind.expected_output is None  # no correction: reference-free evaluators only
    assert corrected.metadata.model_dump()["failed"] == [CORRECTION]
    assert corrected.expected_output == {"expected_items": [
        {"item_id": "hash-brown", "name": "Hash Brown", "quantity": 2}]}  # fmt: skip


def test_a_fixing_prompt_fixes_them_and_a_worse_one_does_not():
    _, fixed = rerun(1)  # v1 looks items up first and reads quantities
    assert fixed.fixed == 2 and fixed.still_failing == 0
    assert fixed.line() == "fixes 2 of 2 production failures, 0 still fail"
    _, worse = rerun(2)  # v2 adds without a lookup: the protocol failure stays
    by_trace = {r.trace_id: r for r in worse.rows}
    assert by_trace["a" * 32].still_failing == ("tool_protocol",)
    assert by_trace["b" * 32].fixed  # v2 does read "two"
    assert worse.line() == "fixes 1 of 2 production failures, 1 still fail"


def test_the_failures_file_round_trips_and_the_newest_day_wins(tmp_path):
    cases, _ = rerun(1)
    write_failures(tmp_path / "2026-11-20.yaml", "drive_thru", cases[:1])
    write_failures(tmp_path / "2026-11-21.yaml", "drive_thru", cases)
    path, loaded = latest_failures(tmp_path)
    assert path.name == "2026-11-21.yaml" and loaded == cases
    assert latest_failures(tmp_path / "none") == (None, [])


def test_dagster_production_failures_feed_the_candidates_rerun(tmp_path, monkeypatch):
    monkeypatch.setenv("EVAL_HOME", str(tmp_path / "home"))
    partitions = build_partitions(SUITE_NAMES)
    production_traces, trace_scores, _, production_failures = build_trace_assets(partitions)
    failure_rerun = build_failure_rerun(partitions, "evaluation")
    resources = eval_resources(tmp_path)
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        traces = materialize(
            [production_traces, trace_scores, production_failures], resources=resources,
            instance=instance, partition_key=MultiPartitionKey(
                {"day": DAY.isoformat(), "suite": "drive_thru"}),
        )  # fmt: skip
        found = materialized(traces, "production_failures")
        saved = yaml.safe_load((tmp_path / "home" / "failures" / "drive_thru" / "2026-11-21.yaml")
                               .read_text())  # fmt: skip
        assert found["failures"].value == len(saved["cases"]) > 0
        assert found["failed_tool_protocol"].value > 0
        add_partitions(instance, [EvalPartition("drive_thru", v) for v in ("v1", "v2")])
        outcome = {}
        for version in ("v1", "v2"):
            key = EvalPartition("drive_thru", version).key
            result = materialize([failure_rerun], resources=resources, instance=instance,
                                 partition_key=key)  # fmt: skip
            meta = materialized(result, "failure_rerun")
            (check,) = result.get_asset_check_evaluations()
            outcome[version] = (meta["fixed"].value, meta["still_failing"].value, check)
            listed = [c["metadata"]["trace_id"] for c in saved["cases"]
                      if c["metadata"]["trace_id"] in meta["traces"].value]  # fmt: skip
            assert listed  # lineage: the trace ids in the report (as many as fit inline)
            assert len(meta["traces"].value) < 1000
        fixed_v1, failing_v1, _ = outcome["v1"]
        fixed_v2, failing_v2, check_v2 = outcome["v2"]
        assert fixed_v1 + failing_v1 == fixed_v2 + failing_v2 == found["failures"].value
        assert fixed_v1 > fixed_v2 and failing_v2 > 0
        assert not check_v2.passed and check_v2.severity.value == "WARN"
        assert check_v2.description.startswith("WARN — drive_thru v2: fixes ")
        # each rerun is a run of the results store (tier "failures"), the second from the memo
        again = materialize([failure_rerun], resources=resources, instance=instance,
                            partition_key=EvalPartition("drive_thru", "v1").key)  # fmt: skip
        run_id = materialized(again, "failure_rerun")["run_id"]
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    reruns = store.list_runs(suite="drive_thru", prompt_version="v1")
    assert len(reruns) == 2 and {r.tier for r in reruns} == {"failures"}
    assert {r.status for r in reruns} == {"complete"}
    outputs = store.read_outputs(run_id.value)
    assert outputs and all(o.source_run_id not in (None, run_id.value) for o in outputs)
    assert find_baseline(store, reruns[0], "v1") is None  # no gate counts a rerun
