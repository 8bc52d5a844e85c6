"""Each benchmark runs from one command and prints its table: small sizes here, to prove
the scripts work (not to time anything; the numbers live in BENCHMARKS.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from eval_pipeline_tests.helpers import ROOT


def bench(script: str, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def table_rows(text: str, first_cell: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith(f"| {first_cell}")
    ]


def test_throughput_runs_every_runner_at_every_concurrency(tmp_path):
    picture = tmp_path / "throughput.png"
    out = bench("throughput.py", "--latency-ms", "20", "--items", "47", "--concurrency", "1",
                "4", "--reps", "2", "--sequential-items", "5", "--plot", str(picture))  # fmt: skip
    assert picture.read_bytes().startswith(b"\x89PNG") and f"picture: {picture}" in out
    found = [r for r in table_rows(out, "") if r[1].isdigit()]
    rows = {(r[0], r[1]): r for r in found if len(r) == 12}  # the main table
    ceiling = {(r[0], r[1]): r for r in found if len(r) == 6}
    assert set(rows) == {("ours", "1"), ("ours", "4"), ("langfuse run_experiment", "1"),
                         ("langfuse run_experiment", "4"), ("bare LangGraph", "1"),
                         ("bare LangGraph", "4"), ("sequential", "1"),
                         ("ours, 2 shards", "4")}  # fmt: skip
    assert rows["ours, 2 shards", "4"][2] == "47"  # every item once over both processes
    for row in rows.values():
        assert row[-1] == "0", row  # no item errors
        assert float(row[5]) > 0 and row[7].endswith("%")
        if row[1] == "1":
            assert row[8] == ""  # one repetition at C = 1
        elif row[8]:  # the median repetition lies within the range of both
            low, high = map(float, row[8].split("–"))
            assert low <= float(row[4]) <= high
    assert "k = " in out and "+ OpenAI SDK" in out
    # the ceiling of our rows: the schedule bound (100% with one slot), times the agent's share
    assert set(ceiling) == {("ours", "1"), ("ours", "4"), ("ours, 2 shards", "4")}
    assert ceiling["ours", "1"][2] == "100.0%"
    for _, _, bound, most, measured, below in ceiling.values():
        assert 0 < float(most[:-1]) < float(bound[:-1]) <= 100 and below.endswith(" pt")
        assert float(measured[:-1]) <= float(bound[:-1]) + 0.5  # no item beats calls × L
    layer, mine = table_rows(out, "raw HTTP")  # the layer table's, then ours − bare's
    (_, cpu_ms, calls_s, share) = layer  # the harness's ceiling
    assert float(cpu_ms) > 0 and float(calls_s) > 0 and share.endswith("%")
    assert mine[1] == cpu_ms
    # our own CPU per call: ours − the same graph driven bare, at the top C, per repetition
    assert "at C = 4, ours against the same graph" in out
    ((_, ours_ms, _),) = [r for r in table_rows(out, "ours |") if len(r) == 3]
    ((_, bare_ms, _),) = [r for r in table_rows(out, "bare LangGraph |") if len(r) == 3]
    ((_, own, spread_),) = table_rows(out, "ours − bare LangGraph")
    low, high = map(float, spread_.split("–"))
    assert float(ours_ms) > 0 and float(bare_ms) > 0 and low <= float(own) <= high


def test_throughput_scaling_table_has_every_shard_count():
    out = bench("throughput.py", "--latency-ms", "20", "--items", "47", "--concurrency", "4",
                "--reps", "1", "--shards", "1", "--scaling", "1", "2",
                "--sequential-items", "1", "--runners", "ours")  # fmt: skip
    assert "ours, 1 shards" not in out  # --shards 1: no sharded row in the main table
    scaling = {r[0]: r for r in table_rows(out, "") if r[0] in ("1", "2")}
    assert set(scaling) == {"1", "2"}
    assert scaling["1"][1] == "4" and scaling["2"][1] == "2"  # C per shard
    assert all(float(r[2]) > 0 and r[3].endswith("%") for r in scaling.values())


def test_throughput_under_a_rate_limit_retries_and_loses_nothing():
    # (ours alone, once, in one process: the other runners and the shards are the first
    # test's; here only whether ours holds a rate limit and loses nothing)
    out = bench("throughput.py", "--latency-ms", "5", "--items", "47", "--concurrency", "8",
                "--rate-limit", "40", "--sequential-items", "2", "--reps", "1",
                "--shards", "1", "--runners", "ours")  # fmt: skip
    ours = next(r for r in table_rows(out, "ours"))
    assert ours[2] == "47" and ours[-1] == "0"
    assert float(ours[5]) <= 40 * 1.2  # calls/s held near the limit, 429s retried
    assert "Ceiling:" not in out  # C / (k·L) is not the limit under a rate limit


def test_incremental_warm_rerun_makes_no_model_calls():
    out = bench("incremental.py", "--latency-ms", "5", "--repeats", "1")
    rows = {r[0]: r for r in table_rows(out, "")}
    assert rows["warm: nothing changed"][4] == "0"
    assert rows["cold: empty memo"][4] != "0"
    edited = next(r for name, r in rows.items() if name.startswith("one case edited"))
    assert edited[3] == str(int(edited[2]) - 1)  # all but one item reused


@pytest.mark.postgres
def test_scale_scores_and_summarises_on_both_stores(pg_url):
    out = bench("scale.py", "--items", "2000", env={"EVAL_TEST_PG_URL": pg_url})
    rows = {r[0]: r for r in table_rows(out, "") if r[0] in ("sqlite", "postgres")}
    assert set(rows) == {"sqlite", "postgres"}
    assert rows["sqlite"][6] == rows["postgres"][6]  # same summary size on both


def test_sensor_tick_benchmark():
    out = bench("automation.py", "--prompts", "20", "--ticks", "2")
    assert table_rows(out, "steady, nothing moved (2 ticks)")
    assert table_rows(out, "after a label move (requests 1 run)")


def test_trace_streaming_benchmark():
    out = bench("traces.py", "--traces", "3000", "--cap", "50")
    # 1,000 per page, all read twice: the traces' totals, then their roots
    assert out.startswith("3000 traces in 6 requests")
    assert "sample of " in out


def test_newcomer_benchmark_times_the_smoke_run():
    out = bench("newcomer.py", "--runs", "1", "--only", "run --suite drive_thru --tier smoke")
    assert "`eval-pipeline run --suite drive_thru --tier smoke`" in out


def test_cli_startup_benchmark_compares_two_checkouts():
    out = bench("cli_startup.py", "--before", str(ROOT), "--runs", "1", "--only=--help")
    (row,) = table_rows(out, "`eval-pipeline --help`")
    before, after, ratio = (float(cell) for cell in row[1:])
    assert 0 < before < 5 and 0 < after < 5 and ratio > 0


def test_sequential_gate_benchmark_compares_three_gates_against_the_floor():
    out = bench("sequential_gate.py", "--runs", "20", "--cases", "50", "--cap", "60")
    rows = table_rows(out, "50")
    assert [r[2].split(" (")[0] for r in rows if r[1] == "−0.3"] == [
        "sequential", "fixed", "t-test at size α"
    ]  # fmt: skip
    assert all(r[-1].endswith("%") for r in rows if r[1] == "0")  # pairs as % of the floor
    equal = out.split("## Equal power")[1]
    assert [r[0] for r in table_rows(equal, "") if r[0].isdigit()] == ["1", "2", "3"]


def test_repeats_benchmark():
    out = bench("repeats.py", "--runs", "5", "--cases", "30")
    assert [row[1] for row in table_rows(out, "−m")] == [
        "none", "baseline flaky", "candidate failed", "all flaky, from the start"
    ]  # fmt: skip


def test_gate_decisiveness_prints_the_pairs_to_decide_against_the_floor():
    out = bench("gate_decisiveness.py", "--tables", "a", "--quick")
    rows = {r[0]: r for r in table_rows(out, "0.")}
    assert rows["0.1"][1:4] == ["29", "34", "1.17"]  # floor, this gate, × the floor


def test_gate_validity_prints_both_sides_prefix_tuning_and_reducers():
    out = bench("gate_validity.py", "--runs", "100")
    assert len(table_rows(out, "fixes 10%")) == 3
    assert [r[1] for r in table_rows(out, "prefix tuning")] == ["20", "40", "60"]
    assert len(table_rows(out, "pass_all_k")) == 2


def test_load_benchmark_prints_time_memory_and_store_growth_per_run():
    out = bench("load.py", "--cases", "60", "--concurrency", "8")
    rows = {r[0]: r for r in table_rows(out, "") if r[0] in ("cold", "again (memo)")}
    assert "item_memo +60" in rows["cold"][-1] and "item_memo" not in rows["again (memo)"][-1]
    assert all(float(r[3]) > 50 for r in rows.values())  # peak RSS, MiB


def test_verdict_properties_counts_the_suites_it_checked_and_their_failures():
    out = bench("verdict_properties.py", "--examples", "6", "--most", "20")
    ((checked, _, failed, _, _),) = table_rows(out, "6 ")
    assert checked == "6" and failed == "0", out


def test_redaction_benchmark_prints_the_cpu_per_span_payload():
    out = bench("redaction.py", "--spans", "200")
    ((spans, secrets, micros),) = table_rows(out, "200 ")
    assert spans == "200" and int(secrets) > 3 and float(micros) > 0
