"""The results store's tables (SQLAlchemy Core): the one place its schema is written.

A change here is also a migration (migrations/versions/, applied when a store is opened;
test_store_migrations checks that the migrated schema is this one).
"""

from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
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
    delete,
    insert,
)  # fmt: skip
from sqlalchemy.engine import Engine

metadata = MetaData()
runs = Table(
    "runs", metadata,
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
    Column("notes", JSON),
    Column("baseline_run_id", String(200)),
    Column("options", JSON),
    Column("gate_note", Text),  # NULL in stores written before it
    Column("agent_versioned", Boolean),  # NULL in stores written before it: treated as not
    Column("code_commit", String(80)),  # NULL in stores written before it
    Column("stopped", Text),  # why the run stopped before its items ran out (a budget)
    Column("owner", String(300)),  # the process driving an in-process run (abandoned runs)
    Column("not_baseline", Text),  # why it may never be a baseline, decided when it settled
    Index("ix_runs_suite_version_status", "suite", "prompt_version", "status"),
)  # fmt: skip
item_outputs = Table(
    "item_outputs", metadata,
    Column("run_id", String(200), ForeignKey("runs.run_id"), primary_key=True),
    Column("item_id", String(200), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("output", JSON),
    Column("error", Text),
    Column("latency_ms", Float, nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("source_run_id", String(200)),
    Column("error_kind", String(100)),
    Column("usage", JSON),
    Column("unpriced_models", JSON),
    Column("fault", String(20)),
)  # fmt: skip
item_scores = Table(
    "item_scores", metadata,
    Column("run_id", String(200), ForeignKey("runs.run_id"), primary_key=True),
    Column("item_id", String(200), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("evaluator", String(200), primary_key=True),
    Column("value", Float),
    Column("comment", Text),
    Column("metadata", JSON),
    Column("error_kind", String(100)),
    Column("data_type", String(20)),  # NULL in stores written before it: NUMERIC
    Column("category", String(200)),  # a CATEGORICAL score's (core/scoring/categories.py)
)  # fmt: skip
summaries = Table(
    "summaries", metadata,
    Column("run_id", String(200), ForeignKey("runs.run_id"), primary_key=True),
    Column("summary", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)  # fmt: skip

# What each run concluded (one row per settled run): the verdicts view reads the latest.
verdicts = Table(
    "verdicts", metadata,
    Column("run_id", String(200), ForeignKey("runs.run_id"), primary_key=True),
    Column("verdict", String(20), nullable=False),
    Column("reason", Text, nullable=False),
    Column("metric", String(200)),
    Column("delta", Float),
    Column("ci_low", Float),
    Column("ci_high", Float),
    Column("baseline_run_id", String(200)),
    Column("decided_after", Text),
)  # fmt: skip

# What a team decided about its suites' baselines, kept as history (nothing is deleted):
# a run retired (never a baseline) or restored, a suite's baseline pinned to a run or
# unpinned; the latest change of a run (retire/restore) or of a suite and label
# (pin/unpin) is what holds (stored_changes.py).
baseline_changes = Table(
    "baseline_changes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("suite", String(100), nullable=False),
    Column("run_id", String(200), nullable=False),
    Column("action", String(20), nullable=False),  # retire, restore, pin, unpin
    Column("label", String(100)),  # a pin's baseline label
    Column("by", String(200), nullable=False),
    Column("why", Text, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Index("ix_baseline_changes_suite", "suite"),
)  # fmt: skip

# Deliveries to external systems (e.g. scores to Langfuse) that failed and wait for the next
# run: keyed by a deterministic id, so queuing the same thing twice keeps one row.
outbox = Table(
    "outbox", metadata,
    Column("id", String(200), primary_key=True),
    Column("kind", String(50), nullable=False),
    Column("payload", JSON, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("last_error", Text),
    Column("queued_at", DateTime(timezone=True), nullable=False),
)  # fmt: skip

# Memoized item outputs (core/running/memo.py): one row per key, the latest successful output.
item_memo = Table(
    "item_memo", metadata,
    Column("memo_key", String(64), primary_key=True),
    Column("suite", String(100), nullable=False),
    Column("item_id", String(200), nullable=False),
    Column("repeat", Integer, nullable=False),
    Column("output", JSON, nullable=False),
    Column("latency_ms", Float, nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("usage", JSON),
    Column("run_id", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)  # fmt: skip


def replace_rows(engine: Engine, table: Table, run_id: str, rows: list[dict[str, Any]]) -> int:
    """The run's rows in ``table`` replaced by ``rows``, in one transaction."""
    with engine.begin() as conn:
        conn.execute(delete(table).where(table.c.run_id == run_id))
        if rows:
            conn.execute(insert(table), rows)
    return len(rows)
