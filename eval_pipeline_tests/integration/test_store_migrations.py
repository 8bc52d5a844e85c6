"""The results store's schema migrations (Alembic), on SQLite and on a real Postgres: a new
store, a store written before migrations existed (at today's schema, and at the first
release's, before the columns the old ALTER TABLE added), concurrent first opens, and a
store a newer release migrated further."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    insert,
    text,
)  # fmt: skip

from eval_pipeline.core.scoring.summary import Summary
from eval_pipeline.core.store.migrate import VERSION_TABLE
from eval_pipeline.core.store.records import ItemOutput, RunStatus
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.store.tables import metadata
from eval_pipeline_tests.helpers import ROOT
from eval_pipeline_tests.integration.test_results_store import run_record
from eval_pipeline_tests.pg import fresh_database

HEAD = "0003"
SUMMARY = Summary(n_cases=1, n_items=1, repeats=1, n_errors=0, metrics={"oc": 0.5})


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request, tmp_path):
    """An empty database of its own for each test."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'results.sqlite'}"
    else:
        with fresh_database(request.getfixturevalue("pg_server")) as database:
            yield database


def first_release() -> MetaData:
    """The store's tables as the first release wrote them (commit 1c205cb): no verdicts,
    outbox or memo, none of the columns added since."""
    old = MetaData()
    Table("runs", old,
          Column("run_id", String(200), primary_key=True),
          Column("suite", String(100), nullable=False),
          Column("prompt_name", String(200), nullable=False),
          Column("prompt_version", String(50), nullable=False),
          Column("prompt_hash", String(64), nullable=False),
          Column("dataset_version", String(64), nullable=False),
          Column("model", String(200), nullable=False),
          Column("tier", String(20), nullable=False),
          Column("repeats", Integer, nullable=False),
          Column("prompt_config", JSON, nullable=False),
          Column("model_params", JSON, nullable=False),
          Column("agent_version", String(100), nullable=False),
          Column("evaluator_versions", JSON, nullable=False),
          Column("status", String(20), nullable=False),
          Column("started_at", DateTime(timezone=True), nullable=False),
          Column("finished_at", DateTime(timezone=True)),
          Column("dagster_run_id", String(100)),
          Column("error", Text),
          Index("ix_runs_suite_version_status", "suite", "prompt_version", "status"))
    Table("item_outputs", old,
          Column("run_id", String(200), ForeignKey("runs.run_id"), primary_key=True),
          Column("item_id", String(200), primary_key=True),
          Column("repeat", Integer, primary_key=True),
          Column("output", JSON),
          Column("error", Text),
          Column("latency_ms", Float, nullable=False),
          Column("input_tokens", Integer, nullable=False),
          Column("output_tokens", Integer, nullable=False),
          Column("cost_usd", Float, nullable=False),
          Column("attempts", Integer, nullable=False))
    Table("item_scores", old,
          Column("run_id", String(200), ForeignKey("runs.run_id"), primary_key=True),
          Column("item_id", String(200), primary_key=True),
          Column("repeat", Integer, primary_key=True),
          Column("evaluator", String(200), primary_key=True),
          Column("value", Float),
          Column("comment", Text))
    Table("summaries", old,
          Column("run_id", String(200), ForeignKey("runs.run_id"), primary_key=True),
          Column("summary", JSON, nullable=False),
          Column("created_at", DateTime(timezone=True), nullable=False))  # fmt: skip
    return old


def write_old_store(url: str, tables: MetaData) -> None:
    """A store as the old code left it: its tables, one settled run with an output, a
    score and a summary, and no version table."""
    engine = create_engine(url)
    tables.create_all(engine)
    with engine.begin() as conn:
        run = {"run_id": "old", "suite": "drive_thru", "prompt_name": "p",
               "prompt_version": "v1", "prompt_hash": "h", "dataset_version": "d",
               "model": "offline", "tier": "full", "repeats": 1, "prompt_config": {"t": 0},
               "model_params": {}, "agent_version": "a", "evaluator_versions": {"oc": "1"},
               "status": "complete", "started_at": datetime(2026, 1, 2, tzinfo=UTC)}  # fmt: skip
        conn.execute(insert(tables.tables["runs"]).values(run))
        conn.execute(insert(tables.tables["item_outputs"]).values(
            run_id="old", item_id="a", repeat=0, output={"x": 1}, latency_ms=2.0,
            input_tokens=3, output_tokens=4, cost_usd=0.5, attempts=1))  # fmt: skip
        conn.execute(insert(tables.tables["item_scores"]).values(
            run_id="old", item_id="a", repeat=0, evaluator="oc", value=0.5, comment="half"))
        conn.execute(insert(tables.tables["summaries"]).values(
            run_id="old", summary=SUMMARY.to_dict(), created_at=datetime.now(UTC)))
    engine.dispose()


def assert_at_head(store: ResultsStore) -> None:
    """The store is at the last migration, its schema exactly tables.py's."""
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        assert context.get_current_revision() == HEAD
        assert compare_metadata(context, metadata) == []
        assert conn.execute(text(f"SELECT count(*) FROM {VERSION_TABLE}")).scalar_one() == 1


def assert_old_rows_kept(store: ResultsStore) -> None:
    run = store.get_run("old")
    assert (run.status, run.prompt_config, run.notes, run.agent_versioned) == (
        RunStatus.COMPLETE, {"t": 0}, [], False)  # the new columns read as their defaults
    (output,) = store.read_outputs("old")
    assert (output.output, output.cost_usd, output.source_run_id, output.usage) == (
        {"x": 1}, 0.5, None, {})
    (score,) = store.read_scores("old")
    assert (score.value, score.comment, score.data_type) == (0.5, "half", "NUMERIC")
    assert store.read_summary("old") == SUMMARY


def use_every_piece(store: ResultsStore) -> None:
    """The migrated store takes what only the newer schema holds."""
    store.write_outputs("old", [ItemOutput("a", 0, {"x": 2}, source_run_id="r0")])
    assert store.read_outputs("old")[0].source_run_id == "r0"
    store.stop_run("old", "budget")
    assert store.get_run("old").stopped == "budget"
    store.queue("scores", {"k": {"v": 1}}, "down")
    assert store.queued("scores") == {"k": {"v": 1}}
    assert store.memo_put("drive_thru", "old", {"m": ItemOutput("a", 0, {"x": 3})}) == 1


def test_a_new_store_is_created_at_the_last_migration(url):
    with ResultsStore(url) as store:
        assert_at_head(store)
    with ResultsStore(url) as store:  # opened again: nothing to do
        assert_at_head(store)


def test_a_store_at_todays_schema_written_before_migrations_is_adopted(url):
    write_old_store(url, metadata)  # what the old code's create_all made, no version table
    with ResultsStore(url) as store:
        assert_at_head(store)
        assert_old_rows_kept(store)
        use_every_piece(store)


def test_a_first_release_store_gains_the_tables_and_columns_added_since(url):
    write_old_store(url, first_release())
    with ResultsStore(url) as store:
        assert_at_head(store)
        assert_old_rows_kept(store)
        use_every_piece(store)


def test_a_store_of_the_release_before_baseline_changes_gains_them(url):
    """A store at 0002 (the release before runs could be retired or pinned): its runs are
    kept, read with ``not_baseline`` empty, and it takes the team's baseline decisions."""
    from alembic import command

    from eval_pipeline.core.store.migrate import _config
    from eval_pipeline.core.store.stored_changes import BaselineChange

    engine = create_engine(url)
    with engine.begin() as conn:
        config = _config()
        config.attributes["connection"] = conn
        command.upgrade(config, "0002")
    at_0002 = MetaData()
    at_0002.reflect(engine, only=["runs", "item_outputs", "item_scores", "summaries"])
    engine.dispose()
    write_old_store(url, at_0002)  # (its tables are there: the run and its rows are added)
    with ResultsStore(url) as store:
        assert_at_head(store)
        assert_old_rows_kept(store)
        assert store.get_run("old").not_baseline is None
        store.record_change(BaselineChange("drive_thru", "old", "retire", "ann", "bad",
                                           datetime(2026, 1, 3, tzinfo=UTC)))  # fmt: skip
        assert store.retired("drive_thru")["old"].why == "bad"


def test_a_store_a_newer_release_migrated_is_opened_as_it_is(url):
    with ResultsStore(url) as store, store.engine.begin() as conn:
        conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = 'from_the_future'"))
    with ResultsStore(url) as store:
        store.create_run(run_record())
        assert store.get_run("r1") is not None
        with store.engine.connect() as conn:
            version = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
        assert version == "from_the_future"


OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from eval_pipeline.core.store.records import RunRecord
from eval_pipeline.core.store.results_store import ResultsStore
url, folder, n = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
(folder / f"ready-{n}").touch()
while not (folder / "go").exists():
    time.sleep(0.002)
with ResultsStore(url) as store:
    store.create_run(RunRecord(run_id=f"run-{n}", suite="s", prompt_name="p",
                               prompt_version="v1", prompt_hash="h", dataset_version="d",
                               model="m", tier="full"))
"""
PROCESSES = 3


@pytest.mark.parametrize("old", [None, "first_release"])
def test_processes_opening_one_store_at_once_migrate_it_once(url, old, tmp_path):
    """Processes open the same store at the same moment (new, or written by the first
    release): one migrates, the others wait for it; all of them write."""
    if old:
        write_old_store(url, first_release())
    command = [sys.executable, "-c", OPEN_AT_ONCE, url, str(tmp_path)]
    processes = [subprocess.Popen([*command, str(n)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
                 for n in range(PROCESSES)]  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < PROCESSES and time.monotonic() < deadline:
        time.sleep(0.01)  # every process has imported the store and waits
    (tmp_path / "go").touch()
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    with ResultsStore(url) as store:
        assert_at_head(store)
        assert {f"run-{n}" for n in range(PROCESSES)} <= {r.run_id for r in store.list_runs()}
        if old:
            assert_old_rows_kept(store)


def test_a_store_at_the_head_is_opened_without_importing_alembic(tmp_path):
    """The head the migration modules declare is Alembic's, and a process that opens a
    store already at it never imports Alembic (~0.2 s of CPU in every CLI command)."""
    from eval_pipeline.core.store.migrate import _revisions, declared_head

    assert declared_head() == _revisions()[0] == HEAD
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    with ResultsStore(url) as store:  # made and migrated here
        store.create_run(run_record())
    code = ("import sys\nfrom eval_pipeline.core.store.results_store import ResultsStore\n"
            "with ResultsStore(sys.argv[1]) as store:\n    assert store.get_run('r1')\n"
            "print('alembic' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True,
                         cwd=ROOT, check=True)  # fmt: skip
    assert out.stdout.split() == ["False"]
