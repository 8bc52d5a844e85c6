"""The results store on SQLite and on a real PostgreSQL server."""

from datetime import UTC, datetime, timedelta

import pytest

from eval_pipeline.core.scoring.summary import RunEvaluation, SliceRow, Summary
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord, RunStatus
from eval_pipeline.core.store.results_store import ResultsStore, ResultsStoreError


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'sub' / 'results.sqlite'}"
    else:
        url = request.getfixturevalue("pg_url")
    with ResultsStore(url) as s:
        yield s
        if request.param == "postgres":  # the session's database, empty for the next test
            from eval_pipeline.core.store.migrate import VERSION_TABLE
            from eval_pipeline.core.store.tables import metadata

            metadata.drop_all(s.engine)
            with s.engine.begin() as conn:
                conn.exec_driver_sql(f"DROP TABLE {VERSION_TABLE}")


def run_record(run_id="r1", suite="drive_thru", version="v1", minutes_ago=0, **kw):
    return RunRecord(
        run_id=run_id, suite=suite, prompt_name="p", prompt_version=version, prompt_hash="h",
        dataset_version="d", tier="full",
        prompt_config={"temperature": 0.0, "nested": {"list": [1, None, "x"]}},
        started_at=datetime.now(UTC) - timedelta(minutes=minutes_ago), **{"model": "offline", **kw},
    )  # fmt: skip


EMPTY = Summary(n_cases=0, n_items=0, repeats=0, n_errors=0, metrics={})


def outputs(n=3):
    return [
        ItemOutput(item_id=f"c{i}", repeat=0, output={"order_items": [{"q": i}], "none": None},
                   latency_ms=1.5 * i, input_tokens=i, output_tokens=2 * i, cost_usd=0.001 * i)
        for i in range(n)
    ] + [ItemOutput(item_id="bad", repeat=0, output=None, error="ValueError: boom")]  # fmt: skip


def test_round_trip(store):
    store.create_run(run_record())
    store.write_outputs("r1", outputs())
    store.write_scores(
        "r1", [ItemScore("c1", 0, "oc", 0.5, "half"), ItemScore("c0", 0, "oc", None)]
    )
    summary = Summary(n_cases=2, n_items=2, repeats=1, n_errors=1, metrics={"oc": 0.25},
                      by_category={"x": SliceRow(2, {"oc": 0.25, "none": None})},
                      run_evaluations={"avg": RunEvaluation(0.5, "half")})  # fmt: skip
    store.write_summary("r1", summary)
    assert store.get_run("r1").status == "running"  # summarised: settled once judged
    store.settle_run("r1", RunStatus.COMPLETE)
    run = store.get_run("r1")
    assert run.status == "complete" and run.finished_at.tzinfo is not None
    assert run.prompt_config == {"temperature": 0.0, "nested": {"list": [1, None, "x"]}}
    assert store.read_outputs("r1") == sorted(outputs(), key=lambda o: (o.item_id, o.repeat))
    assert [s.item_id for s in store.read_scores("r1")] == ["c0", "c1"]
    assert store.read_summary("r1") == summary  # typed again after the JSON round trip
    frame = store.scores_frame("r1")
    assert list(frame.columns) == ["item_id", "repeat", "evaluator", "value", "comment"]


def test_writes_replace_rather_than_duplicate(store):
    store.create_run(run_record())
    store.write_outputs("r1", outputs())
    store.write_outputs("r1", outputs(2))
    assert len(store.read_outputs("r1")) == 3


def test_a_shard_replaces_only_its_own_items_repeats_of_one_case_included(store):
    """Shards deal out (case, repeat) items, so two shards may both hold repeats of one
    case: each one's write must leave the other's repeats alone (450 pairs each: two chunks)."""

    def item(case: int, repeat: int, by: str) -> ItemOutput:
        return ItemOutput(item_id=f"c{case}", repeat=repeat, output={"by": by})

    jobs = [(case, repeat) for case in range(300) for repeat in range(3)]
    mine, theirs = jobs[0::2], jobs[1::2]
    store.create_run(run_record())
    store.write_outputs("r1", [item(c, r, "theirs") for c, r in theirs],
                        items=[(f"c{c}", r) for c, r in theirs])  # fmt: skip
    for attempt in ("first", "again"):  # a re-executed shard replaces its own rows
        store.write_outputs("r1", [item(c, r, attempt) for c, r in mine],
                            items=[(f"c{c}", r) for c, r in mine])  # fmt: skip
    by = {(o.item_id, o.repeat): o.output["by"] for o in store.read_outputs("r1")}
    assert len(by) == len(jobs)
    assert {by[f"c{c}", r] for c, r in theirs} == {"theirs"}
    assert {by[f"c{c}", r] for c, r in mine} == {"again"}


def test_create_run_resets_an_existing_run(store):
    store.create_run(run_record())
    store.write_outputs("r1", outputs())
    store.write_summary("r1", EMPTY)
    store.create_run(run_record(model="other"))
    run = store.get_run("r1")
    assert run.status == "running" and run.model == "other"
    assert store.read_outputs("r1") == [] and store.read_summary("r1") is None


def test_failed_batch_keeps_previous_rows(store):
    store.create_run(run_record())
    store.write_outputs("r1", outputs())
    duplicate = [*outputs(), ItemOutput(item_id="c0", repeat=0, output={})]
    with pytest.raises(Exception):  # noqa: B017 - the driver's IntegrityError type differs
        store.write_outputs("r1", duplicate)
    assert len(store.read_outputs("r1")) == 4


def test_writing_a_summary_is_atomic(store):
    store.create_run(run_record())
    with pytest.raises(Exception):  # noqa: B017 - a non-JSON summary fails inside the transaction
        store.write_summary("r1", Summary(0, 0, 0, 0, metrics={"not json": object()}))
    assert store.get_run("r1").status == "running"
    assert store.read_summary("r1") is None


def test_list_runs_filters_and_orders_newest_first(store):
    store.create_run(run_record("old", minutes_ago=10))
    store.create_run(run_record("new", minutes_ago=1))
    store.create_run(run_record("other", version="v2"))
    store.write_summary("new", EMPTY)
    store.settle_run("new", RunStatus.COMPLETE)
    assert [r.run_id for r in store.list_runs(prompt_version="v1")] == ["new", "old"]
    assert [r.run_id for r in store.list_runs(status="complete")] == ["new"]
    assert store.list_runs(suite="nope") == []


def test_unreachable_server_error_hides_the_password():
    with pytest.raises(ResultsStoreError) as info:
        ResultsStore("postgresql://user:s3cr3tpw@127.0.0.1:1/db")
    assert "s3cr3tpw" not in str(info.value) and "127.0.0.1:1" in str(info.value)
    assert "EVAL_RESULTS_URL" in str(info.value)


def test_a_stage_that_raises_marks_the_run_failed(store):
    from eval_pipeline.core.evaluation import failure_recorded

    store.create_run(run_record())
    with pytest.raises(RuntimeError), failure_recorded(store, "r1"):
        raise RuntimeError("model endpoint vanished")
    run = store.get_run("r1")
    assert run.status == "failed" and run.error == "RuntimeError: model endpoint vanished"


def test_memo_upserts_and_filters_by_producing_run(store):
    ok = ItemOutput("a", 0, {"order": [1]}, latency_ms=5, input_tokens=3, cost_usd=0.1)
    failed = ItemOutput("b", 0, None, error="boom")
    assert store.memo_put("drive_thru", "r1", {"k1": ok, "k2": failed}) == 1
    assert set(store.memo_get(["k1", "k2", "k3"])) == {"k1"}
    hit = store.memo_get(["k1"])["k1"]
    assert (hit.output, hit.source_run_id, hit.cost_usd) == ({"order": [1]}, "r1", 0.1)
    newer = ItemOutput("a", 0, {"order": [2]})
    store.memo_put("drive_thru", "r2", {"k1": newer})  # refresh overwrites the same key
    assert store.memo_get(["k1"])["k1"].output == {"order": [2]}
    assert store.memo_get(["k1"], run_id="r1") == {}
    assert store.memo_get(["k1"], run_id="r2")["k1"].source_run_id == "r2"
    many = {f"key-{i}": ItemOutput(f"i{i}", 0, {"n": i}) for i in range(1200)}
    store.memo_put("drive_thru", "r3", many)
    assert len(store.memo_get(list(many))) == 1200  # more keys than one IN (...) batch
