"""Production traces: parsing, sampling, reference-free scoring, review candidates."""

from __future__ import annotations

import json
import random
import shutil
import tracemalloc
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from eval_examples.drive_thru.evaluators import tool_protocol

from eval_pipeline.core.traces.candidates import (
    candidate_id,
    select_candidates,
    write_review_file,
)
from eval_pipeline.core.traces.observations import (
    MAX_FIELD_CHARS,
    TraceError,
    TraceRecord,
    parse_observation,
    read_trace_file,
    score_traces,
)
from eval_pipeline.core.traces.sampling import SamplingConfig, sample
from eval_pipeline.evaluators import cost_within, latency_within, no_error
from eval_pipeline_tests.helpers import (
    EXAMPLES,
    PROJECT,
    SUITE_NAMES,
    definitions,
    eval_resources,
    materialized,
    suite_at,
)
from eval_pipeline_tests.helpers import suite as project_suite

TRACES = EXAMPLES / "datasets" / "drive_thru" / "traces"


def observation(n: int, **extra) -> dict:
    start = datetime(2026, 11, 20, 6, tzinfo=UTC) + timedelta(seconds=n)
    return {
        "id": f"obs{n}",
        "traceId": f"{n:032x}",
        "name": "drive-thru-agent",
        "startTime": start.isoformat().replace("+00:00", "Z"),
        "input": json.dumps({"customer_utterance": f"order {n}"}),
        "output": json.dumps({"current_order": None, "tools_called": []}),
        "metadata": {"category": ["simple", "greeting", "quantity"][n % 3]},
        **extra,
    }


def records(n: int) -> list[TraceRecord]:
    return [parse_observation(observation(i)) for i in range(n)]


def test_shipped_trace_files_parse_and_score():
    files = sorted(TRACES.glob("*.jsonl"))
    assert len(files) == 3
    parsed = [r for f in files for r in read_trace_file(f)]
    assert len(parsed) == 360 and all(r.name == "drive-thru-agent" for r in parsed)
    assert all(isinstance(r.input, dict) and "customer_utterance" in r.input for r in parsed)
    suite = project_suite("drive_thru")
    scores = score_traces(parsed, suite.trace_evaluators)
    assert len(scores) == 360 * len(suite.trace_evaluators)
    assert any(s.value == 0.0 for s in scores if s.evaluator == "no_error")
    assert any(s.value == 0.0 for s in scores if s.evaluator == "tool_protocol")


def test_bad_lines_name_the_file_line_and_field(tmp_path):
    bad = tmp_path / "day.jsonl"
    bad.write_text(json.dumps(observation(1)) + "\n{not json\n")
    with pytest.raises(TraceError, match=r"day.jsonl:2: not valid JSON"):
        list(read_trace_file(bad))
    missing = observation(2)
    del missing["traceId"]
    bad.write_text(json.dumps(missing) + "\n")
    with pytest.raises(TraceError, match=r"day.jsonl:1: field 'traceId'"):
        list(read_trace_file(bad))
    with pytest.raises(TraceError, match="startTime"):
        parse_observation(observation(3, startTime="yesterday"))
    with pytest.raises(TraceError, match="expected a JSON object"):
        parse_observation(["not", "an", "observation"])


def test_oversized_fields_are_truncated_and_bad_bytes_replaced(tmp_path):
    huge = observation(1, output=json.dumps({"response": "x" * (MAX_FIELD_CHARS + 10)}))
    record = parse_observation(huge)
    assert record.output["_truncated"] is True
    assert len(record.output["preview"]) == MAX_FIELD_CHARS
    assert any("output truncated" in n for n in record.notes)
    path = tmp_path / "day.jsonl"
    line = json.dumps(observation(2)).replace("order 2", "caf\\u00e9").encode()
    path.write_bytes(line.replace(b"caf\\u00e9", b"caf\xe9") + b"\n")
    (parsed,) = read_trace_file(path)
    assert parsed.input["customer_utterance"] == "caf\ufffd"
    assert any("UTF-8" in n for n in parsed.notes)


def test_sample_is_reproducible_and_independent_of_order():
    population = records(3000)
    config = SamplingConfig(rate=0.5, cap=100, stratify_by="metadata.category", salt="s1")
    first = sample(population, config)
    shuffled = population[:]
    random.Random(7).shuffle(shuffled)
    assert [r.trace_id for r in sample(shuffled, config)] == [r.trace_id for r in first]
    assert {r.metadata["category"] for r in first} == {"simple", "greeting", "quantity"}
    assert 98 <= len(first) <= 102  # per-stratum rounding
    other_salt = sample(population, SamplingConfig(rate=0.5, cap=100, salt="s2"))
    assert {r.trace_id for r in other_salt} != {r.trace_id for r in first}


def test_rate_keeps_about_that_share_and_cap_bounds_it():
    population = records(10_000)
    kept = sample(population, SamplingConfig(rate=0.1))
    assert 900 <= len(kept) <= 1100
    assert len(sample(population, SamplingConfig(rate=0.1, cap=50))) == 50
    with pytest.raises(ValueError, match="rate"):
        SamplingConfig(rate=0)


def test_sampling_a_stream_keeps_memory_bounded_by_the_cap():
    def stream(n):
        for i in range(n):
            yield parse_observation(observation(i))

    tracemalloc.start()
    kept = sample(stream(30_000), SamplingConfig(rate=0.5, cap=100))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(kept) == 100
    assert peak < 5 * 2**20, f"peak {peak / 2**20:.1f} MiB while streaming 30k traces"


def test_reference_free_evaluators():
    ok = {"tools_called": ["lookup_menu_item", "add_item_to_order"]}
    assert tool_protocol(output=ok).value == 1.0
    blind = tool_protocol(output={"tools_called": ["add_item_to_order", "lookup_menu_item"]})
    assert blind.value == 0.0 and "call 1" in blind.comment
    assert no_error(output=ok, metadata={"level": "ERROR", "status_message": "boom"}).value == 0
    assert no_error(output=None, metadata={}).value == 0.0
    assert no_error(output=ok, metadata={"level": "DEFAULT"}).value == 1.0
    assert latency_within(1000)(output=ok, metadata={"latency_ms": 1500}).value == 0.0
    assert latency_within(1000)(output=ok, metadata={}).value is None
    assert cost_within(0.01)(output=ok, metadata={"cost_usd": 0.002}).value == 1.0


def test_candidates_worst_and_novel_with_user_corrections(tmp_path):
    suite = project_suite("drive_thru")
    traces = [r for f in sorted(TRACES.glob("*.jsonl")) for r in read_trace_file(f)]
    scores = score_traces(traces, suite.trace_evaluators)
    existing = [c.input for c in suite.load_cases()]
    chosen = select_candidates(traces, scores, existing, limit=20)
    assert len(chosen) == 20
    assert {c.reason for c in chosen} == {"worst", "novel"}
    assert chosen == select_candidates(list(reversed(traces)), scores, existing, limit=20)
    worst = [c for c in chosen if c.reason == "worst"]
    assert all(c.mean_score < 1.0 for c in worst)
    path = write_review_file(tmp_path / "review" / "2026-11-20.yaml", "drive_thru", chosen)
    cases = yaml.safe_load(path.read_text())
    assert [c["id"] for c in cases] == [candidate_id("drive_thru", c.trace.trace_id)
                                        for c in chosen]  # fmt: skip
    corrected = [c for c in cases if c["expected_output"] is not None]
    assert all(c["metadata"]["user_feedback"]["corrected_items"] is not None for c in corrected)
    assert all(c["expected_output"] is None for c in cases if not c["metadata"]["user_feedback"])


def test_a_reviewed_candidate_loads_as_a_golden_case(tmp_path):
    traces = [r for f in sorted(TRACES.glob("*.jsonl")) for r in read_trace_file(f)]
    with_fix = [t for t in traces if "corrected_items" in (t.metadata.get("user_feedback") or {})]
    assert with_fix, "the shipped traces include user corrections"
    chosen = select_candidates(with_fix[:1], [], [], limit=1, min_novelty=0.0)
    review = write_review_file(tmp_path / "r.yaml", "drive_thru", chosen)
    (case,) = yaml.safe_load(review.read_text())
    case["metadata"]["category"] = with_fix[0].metadata["category"]  # the reviewer's job
    datasets = tmp_path / "datasets"
    shutil.copytree(EXAMPLES / "datasets" / "drive_thru", datasets / "drive_thru")
    extra = datasets / "drive_thru" / "cases_promoted.yaml"
    extra.write_text(yaml.safe_dump([case]))
    loaded = suite_at("drive_thru", datasets).load_cases()
    assert case["id"] in {c.id for c in loaded}


def test_day_boundaries_are_utc():
    from eval_pipeline.core.traces.observations import day_window

    start, end = day_window(date(2026, 11, 20))
    assert start.tzinfo is UTC and end - start == timedelta(days=1)


def test_trace_assets_sample_score_and_write_the_review_file(tmp_path):
    from dagster import MultiPartitionKey, instance_for_test, materialize

    from eval_pipeline.defs.partitions import build_partitions
    from eval_pipeline.defs.traces.assets import build_trace_assets

    production_traces, trace_scores, golden_candidates, _ = build_trace_assets(
        build_partitions(SUITE_NAMES)
    )
    resources = eval_resources(tmp_path)
    key = MultiPartitionKey({"day": "2026-11-20", "suite": "drive_thru"})
    config = {"ops": {"production_traces": {"config": {"cap": 60}},
                      "golden_candidates": {"config": {"review_dir": str(tmp_path)}}}}  # fmt: skip
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        runs = [
            materialize(
                [production_traces, trace_scores, golden_candidates],
                partition_key=key,
                resources=resources,
                instance=instance,
                run_config=config,
            )
            for _ in range(2)
        ]
    assert all(r.success for r in runs)
    sampled = [materialized(r, "production_traces") for r in runs]
    assert sampled[0]["traces_read"].value == 120
    assert 58 <= sampled[0]["traces_sampled"].value <= 62
    assert sampled[0]["sample_hash"] == sampled[1]["sample_hash"]
    assert sampled[0]["source"].value.startswith("local")
    scored = materialized(runs[0], "trace_scores")
    assert 0 < scored["mean_tool_protocol"].value < 1
    review = tmp_path / "drive_thru" / "2026-11-20.yaml"
    assert yaml.safe_load(review.read_text())
    # a suite without production traces reads nothing (in Langfuse it would match everything)
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        none = materialize(
            [production_traces],
            resources=resources,
            instance=instance,
            partition_key=MultiPartitionKey({"day": "2026-11-20", "suite": "research"}),
        )
    meta = materialized(none, "production_traces")
    assert meta["traces_read"].value == 0 and "no production trace name" in meta["note"].value


def test_daily_schedule_requests_yesterday_for_every_suite():
    from dagster import build_schedule_context

    from eval_pipeline.defs.resources import SuitesResource

    resources = {"suites": SuitesResource(project=str(PROJECT))}
    daily = definitions(eval_resources(Path("/nonexistent"))).resolve_schedule_def(
        "production_traces_daily"
    )
    context = build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 22, 3, tzinfo=UTC), resources=resources
    )
    requests = list(daily(context))
    assert [r.run_key for r in requests] == ["traces:2026-11-21:drive_thru"]  # has traces
    assert requests[0].partition_key.keys_by_dimension == {
        "day": "2026-11-21",
        "suite": "drive_thru",
    }


def test_a_day_below_its_floors_and_clearly_below_the_previous_days_is_flagged(tmp_path):
    """Three shipped days (tool_protocol 0.81–0.85) pass; a fourth where the agent adds
    items without looking them up fails the floor and is clearly below the days before."""
    from dagster import MultiPartitionKey, instance_for_test, materialize

    from eval_pipeline.defs.partitions import build_partitions
    from eval_pipeline.defs.traces.assets import build_trace_assets
    from eval_pipeline_tests.helpers import copy_project

    project = copy_project(tmp_path)
    traces = project.parent / "datasets" / "drive_thru" / "traces"
    bad = (traces / "2026-11-21.jsonl").read_text().replace("lookup_menu_item", "menu_search")
    (traces / "2026-11-22.jsonl").write_text(bad)
    production_traces, trace_scores, *_ = build_trace_assets(build_partitions(SUITE_NAMES))
    resources = eval_resources(tmp_path, project=project)
    (tmp_path / "dagster").mkdir()
    found = {}
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        for day in ("2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22"):
            result = materialize(
                [production_traces, trace_scores], instance=instance, resources=resources,
                partition_key=MultiPartitionKey({"day": day, "suite": "drive_thru"}),
            )  # fmt: skip
            found[day] = {e.check_name: e for e in result.get_asset_check_evaluations()}
            assert result.success  # severity warn: the run goes on
    assert "trace_drop" not in found["2026-11-19"]  # no history yet: "Skipped", not passed
    assert found["2026-11-21"]["trace_floors"].passed and found["2026-11-21"]["trace_drop"].passed
    floors, drop = found["2026-11-22"]["trace_floors"], found["2026-11-22"]["trace_drop"]
    assert not floors.passed and floors.severity.value == "WARN"
    assert floors.description.startswith("WARN — drive_thru 2026-11-22: below floor: tool_proto")
    assert floors.metadata["drive_thru.tool_protocol mean"].value < 0.75
    assert not drop.passed and "tool_protocol" in drop.description
    assert drop.metadata["drive_thru.tool_protocol previous"].value > 0.8
    assert drop.metadata["drive_thru.tool_protocol p value"].value < 0.01


def test_the_drop_rule_needs_history_a_margin_and_significance():
    from eval_pipeline.core.scoring.thresholds import TraceThresholds
    from eval_pipeline.core.traces.daily_checks import DayStats, check_drop

    config = TraceThresholds(drop_margin=0.05, alpha=0.01)
    day = {"m": DayStats(0.80, 0.4, 200)}
    history = [{"m": DayStats(0.90, 0.3, 200)}, {"m": DayStats(0.91, 0.29, 200)}]
    assert not check_drop(day, history, config).passed  # 0.105 lower, p ≈ 0.001
    assert check_drop({"m": DayStats(0.87, 0.34, 200)}, history, config).passed  # within margin
    noisy = {"m": DayStats(0.80, 0.4, 8)}
    assert check_drop(noisy, history, config).passed  # lower, but 8 traces prove nothing
    untested = check_drop(day, history[:1], config)
    assert not untested.tested and "needs 2 previous days" in untested.description


def test_a_trace_without_a_recorded_cost_is_not_within_budget():
    """A root span carries no cost of its own (Langfuse records it on generations): the
    record said 0.0 and cost_within passed without measuring anything."""
    from eval_pipeline.core.traces.observations import parse_observation

    root = {"id": "o1", "traceId": "t1", "name": "drive-thru-agent",
            "startTime": "2026-11-20T10:00:00Z", "input": {}, "output": {}}  # fmt: skip
    record = parse_observation(root)
    assert record.cost_usd is None
    score = cost_within(0.01)(output={}, metadata=record.evaluator_metadata())
    assert score.value is None and "no cost recorded" in score.comment
    priced = parse_observation({**root, "totalCost": 0.002})
    assert cost_within(0.01)(output={}, metadata=priced.evaluator_metadata()).value == 1.0
    free = parse_observation({**root, "costDetails": {"total": 0}})
    assert free.cost_usd == 0.0  # a recorded zero is a zero


def test_a_local_day_sums_each_trace_over_its_generations(tmp_path):
    """A day's file may hold a trace's generations under its root, one per line, as
    Langfuse exports them: the root is the record, its tokens and cost are the trace's
    (before, every line was a record and the root's cost was None)."""
    from eval_pipeline.core.traces.observations import read_trace_day

    root = {"id": "r1", "traceId": "t1", "name": "agent", "startTime": "2026-11-20T10:00:00Z",
            "output": {"a": 1}}  # fmt: skip
    generation = {"traceId": "t1", "name": "ChatOpenAI", "parentObservationId": "r1",
                  "startTime": "2026-11-20T10:00:01Z", "usageDetails": {"input": 10, "output": 5},
                  "costDetails": {"total": 0.25}}  # fmt: skip
    other = {**root, "id": "r2", "traceId": "t2", "name": "another-agent"}
    lines = [root, {**generation, "id": "g1"}, {**generation, "id": "g2"}, other]
    path = tmp_path / "2026-11-20.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (record,) = read_trace_day(path, "agent")
    assert (record.observation_id, record.input_tokens, record.output_tokens) == ("r1", 20, 10)
    assert record.cost_usd == 0.5
