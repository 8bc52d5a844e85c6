"""The results store: runs, item outputs, item scores and summaries (SQLAlchemy Core).

SQLite file by default, Postgres by URL. Every write method is one transaction, so a
crash leaves either the previous state or the new one, never half of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
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
    create_engine,
    delete,
    event,
    insert,
    inspect,
    select,
    text,
    tuple_,
    update,
)  # fmt: skip
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from eval_pipeline.core.errors import ServiceError
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.scoring.summary import Summary
from eval_pipeline.core.store.records import (
    ItemOutput,
    ItemScore,
    RunRecord,
    RunStatus,
    VerdictRecord,
    utcnow,
)

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

# Memoized item outputs (core/memo.py): one row per key, the latest successful output.
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
MEMO_FIELDS = ("output", "latency_ms", "input_tokens", "output_tokens", "cost_usd", "attempts",
               "usage")  # fmt: skip


class ResultsStoreError(ServiceError):
    """The store cannot be opened or written; the message never contains a password."""


def _masked(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def _normalise_url(url: str) -> str:
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


SUPPORTED = {"sqlite": "sqlite:///path/to/results.sqlite",
             "postgresql": "postgresql+psycopg://host/db"}  # fmt: skip


def _check_backend(url: str) -> None:
    """A URL of a database the store supports, else a message naming it and what to use
    (a mysql:// URL failed half-way into a run with ModuleNotFoundError)."""
    try:
        backend = make_url(url).get_backend_name()
    except ArgumentError:
        backend = None
    if backend not in SUPPORTED:
        raise ResultsStoreError(
            f"EVAL_RESULTS_URL={_masked(url)}: the results store is SQLite or Postgres "
            f"({' or '.join(SUPPORTED.values())}), not {backend or 'this'}"
        )


class ResultsStore:
    def __init__(self, url: str):
        self.url = _normalise_url(url)
        _check_backend(self.url)
        try:
            self.engine = _create_engine(self.url)
            metadata.create_all(self.engine)
            _add_missing_columns(self.engine)
        except (SQLAlchemyError, ArgumentError, OSError, ValueError, ImportError) as exc:
            reason = type(exc).__name__
            raise ResultsStoreError(
                f"cannot open the results store at {_masked(self.url)} ({reason}). "
                "Check EVAL_RESULTS_URL, that the server is running and reachable, and the "
                "credentials."
            ) from None

    def __repr__(self) -> str:
        return f"ResultsStore({_masked(self.url)})"

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    def dispose(self) -> None:
        self.engine.dispose()

    # --- writes -------------------------------------------------------------------------
    def create_run(self, run: RunRecord) -> None:
        """Insert the run; an existing run_id is reset (re-execution starts clean)."""
        row = run.to_dict()
        with self.engine.begin() as conn:
            exists = conn.execute(select(runs.c.run_id).where(runs.c.run_id == run.run_id)).first()
            if exists:
                for table in (summaries, item_scores, item_outputs):
                    conn.execute(delete(table).where(table.c.run_id == run.run_id))
                conn.execute(update(runs).where(runs.c.run_id == run.run_id).values(**row))
            else:
                conn.execute(insert(runs).values(**row))

    def write_outputs(
        self,
        run_id: str,
        outputs: Iterable[ItemOutput],
        *,
        items: Sequence[tuple[str, int]] | None = None,
    ) -> int:
        """Replace the run's outputs; with ``items`` (a shard's (item id, repeat) pairs) only
        those items'."""
        rows = [{"run_id": run_id, **asdict(o)} for o in outputs]
        if items is None:
            return self._replace(item_outputs, run_id, rows)
        key = tuple_(item_outputs.c.item_id, item_outputs.c.repeat)
        with self.engine.begin() as conn:
            for start in range(0, len(items), 400):  # under every database's parameter limit
                chunk = list(items[start : start + 400])
                conn.execute(delete(item_outputs).where(
                    item_outputs.c.run_id == run_id, key.in_(chunk)
                ))  # fmt: skip
            if rows:
                conn.execute(insert(item_outputs), rows)
        return len(rows)

    def write_scores(self, run_id: str, scores: Iterable[ItemScore], *, add: bool = False) -> int:
        """Replace the run's scores; with ``add``, add these to them (a further batch)."""
        rows = [{"run_id": run_id, **asdict(s)} for s in scores]
        if not add:
            return self._replace(item_scores, run_id, rows)
        if rows:
            with self.engine.begin() as conn:
                conn.execute(insert(item_scores), rows)
        return len(rows)

    def _replace(self, table: Table, run_id: str, rows: list[dict[str, Any]]) -> int:
        with self.engine.begin() as conn:
            conn.execute(delete(table).where(table.c.run_id == run_id))
            if rows:
                conn.execute(insert(table), rows)
        return len(rows)

    def write_summary(self, run_id: str, summary: Summary) -> None:
        """The run's summary (replacing an earlier one: a sequential run summarises after
        each batch); its status is ``settle_run``'s."""
        with self.engine.begin() as conn:
            conn.execute(delete(summaries).where(summaries.c.run_id == run_id))
            conn.execute(
                insert(summaries).values(
                    run_id=run_id, summary=summary.to_dict(), created_at=utcnow()
                )
            )

    def settle_run(self, run_id: str, status: RunStatus,
                   verdict: VerdictRecord | None = None) -> None:  # fmt: skip
        """The run has ended with its verdict known: complete, error or stopped."""
        with self.engine.begin() as conn:
            conn.execute(
                update(runs)
                .where(runs.c.run_id == run_id)
                .values(status=status.value, finished_at=utcnow(), error=None)
            )
            if verdict is not None:
                conn.execute(delete(verdicts).where(verdicts.c.run_id == run_id))
                conn.execute(insert(verdicts).values(**asdict(verdict)))

    def latest_verdicts(self, suite: str | None = None) -> list[tuple[RunRecord, VerdictRecord]]:
        """Each suite × prompt version's latest settled run and what it concluded, by suite
        then version."""
        query = (select(runs, *[c.label(f"v_{c.name}") for c in verdicts.c])
                 .join(verdicts, verdicts.c.run_id == runs.c.run_id)
                 .order_by(runs.c.started_at.desc()))  # fmt: skip
        if suite is not None:
            query = query.where(runs.c.suite == suite)
        latest: dict[tuple[str, str], tuple[RunRecord, VerdictRecord]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(query).mappings():
                key = (row["suite"], row["prompt_version"])
                if key not in latest:
                    said = {c.name: row[f"v_{c.name}"] for c in verdicts.c}
                    run = _run({k: v for k, v in row.items() if not k.startswith("v_")})
                    latest[key] = (run, VerdictRecord(**said))
        return [latest[k] for k in sorted(latest, key=lambda k: (k[0], _version_order(k[1])))]

    def add_notes(self, run_id: str, notes: list[str]) -> None:
        """Append notes to a run (e.g. the agent never read the prompt under test)."""
        if not notes:
            return
        with self.engine.begin() as conn:
            row = conn.execute(select(runs.c.notes).where(runs.c.run_id == run_id)).first()
            known = list(row[0] or []) if row else []
            fresh = [n for n in notes if n not in known]
            conn.execute(update(runs).where(runs.c.run_id == run_id).values(notes=known + fresh))

    def stop_run(self, run_id: str, why: str) -> None:
        """Say why the run left items unstarted (a budget reached), kept with what an
        earlier part of it said (another shard, an earlier batch)."""
        with self.engine.begin() as conn:
            row = conn.execute(select(runs.c.stopped).where(runs.c.run_id == run_id)).first()
            said = [s for s in ((row[0] if row else None) or "").split("; ") if s]
            stopped = "; ".join([*said, why]) if why not in said else "; ".join(said)
            conn.execute(update(runs).where(runs.c.run_id == run_id).values(stopped=stopped))

    def abandon_ended(self, ended: Callable[[str], bool]) -> list[str]:
        """Mark ``abandoned`` the running runs whose owner process has ``ended`` (their
        outputs and scores are kept); their ids."""
        running = (runs.c.status == RunStatus.RUNNING.value) & runs.c.owner.is_not(None)
        with self.engine.begin() as conn:
            owners = dict(conn.execute(select(runs.c.run_id, runs.c.owner).where(running)).all())
            gone = [run_id for run_id, owner in owners.items() if ended(owner)]
            for run_id in gone:
                owner = owners[run_id]
                conn.execute(update(runs).where(runs.c.run_id == run_id).values(
                    status=RunStatus.ABANDONED.value, finished_at=utcnow(),
                    error=f"its process ({owner}) ended before the run did; what it finished "
                          "is kept"))  # fmt: skip
        return gone

    def fail_run(self, run_id: str, error: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(runs)
                .where(runs.c.run_id == run_id)
                .values(status="failed", finished_at=utcnow(), error=error)
            )

    def queue(self, kind: str, items: dict[str, dict[str, Any]], error: str) -> None:
        """Put undelivered payloads (by id) in the outbox; re-queuing counts an attempt."""
        if not items:
            return
        with self.engine.begin() as conn:
            known = {
                row.id: row.attempts
                for row in conn.execute(
                    select(outbox.c.id, outbox.c.attempts).where(outbox.c.id.in_(list(items)))
                )
            }
            conn.execute(delete(outbox).where(outbox.c.id.in_(list(known))))
            rows = [
                {"id": key, "kind": kind, "payload": payload, "attempts": known.get(key, 0) + 1,
                 "last_error": error, "queued_at": utcnow()}
                for key, payload in items.items()
            ]  # fmt: skip
            conn.execute(insert(outbox), rows)

    def queued(self, kind: str, limit: int = 10_000) -> dict[str, dict[str, Any]]:
        query = select(outbox.c.id, outbox.c.payload).where(outbox.c.kind == kind)
        with self.engine.connect() as conn:
            return {row.id: row.payload for row in conn.execute(query.limit(limit))}

    def give_up(self, kind: str, to_kind: str, max_attempts: int) -> dict[str, str]:
        """Move the payloads of ``kind`` queued ``max_attempts`` times or more to
        ``to_kind`` (kept, never sent again); their ids and last errors."""
        stale = (outbox.c.kind == kind) & (outbox.c.attempts >= max_attempts)
        with self.engine.begin() as conn:
            rows = conn.execute(select(outbox.c.id, outbox.c.last_error).where(stale))
            found = {row.id: row.last_error or "" for row in rows}
            if found:
                conn.execute(update(outbox).where(stale).values(kind=to_kind))
        return found

    def queue_errors(self, kind: str) -> dict[str, str]:
        """The last error of each queued payload of ``kind`` (by id)."""
        query = select(outbox.c.id, outbox.c.last_error).where(outbox.c.kind == kind)
        with self.engine.connect() as conn:
            return {row.id: row.last_error or "" for row in conn.execute(query)}

    def delivered(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        with self.engine.begin() as conn:
            for start in range(0, len(ids), 500):
                conn.execute(delete(outbox).where(outbox.c.id.in_(ids[start : start + 500])))

    def memo_put(self, suite: str, run_id: str, entries: dict[str, ItemOutput]) -> int:
        """Memoize successful outputs by key (an existing key is overwritten: refresh)."""
        rows = [
            {"memo_key": key, "suite": suite, "item_id": o.item_id, "repeat": o.repeat,
             "run_id": run_id, "created_at": utcnow(), **{f: getattr(o, f) for f in MEMO_FIELDS}}
            for key, o in entries.items() if o.ok and o.output is not None
        ]  # fmt: skip
        if rows:
            with self.engine.begin() as conn:
                upsert = _insert_for(self.engine)(item_memo).values(rows)
                conn.execute(upsert.on_conflict_do_update(
                    index_elements=["memo_key"],
                    set_={c: upsert.excluded[c] for c in ("run_id", "created_at", *MEMO_FIELDS)},
                ))  # fmt: skip
        return len(rows)

    def memo_get(self, keys: Iterable[str], *, run_id: str | None = None) -> dict[str, ItemOutput]:
        """Memoized outputs by key (only those produced by ``run_id``, if given); each output
        names the run that produced it in ``source_run_id``."""
        keys, found = list(keys), {}
        with self.engine.connect() as conn:
            for start in range(0, len(keys), 500):
                query = select(item_memo).where(item_memo.c.memo_key.in_(keys[start : start + 500]))
                if run_id is not None:
                    query = query.where(item_memo.c.run_id == run_id)
                for r in conn.execute(query).mappings():
                    found[r["memo_key"]] = _output({
                        "item_id": r["item_id"], "repeat": r["repeat"],
                        "source_run_id": r["run_id"], **{f: r[f] for f in MEMO_FIELDS},
                    })  # fmt: skip
        return found

    # --- reads --------------------------------------------------------------------------
    def get_run(self, run_id: str) -> RunRecord | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).mappings().first()
        return _run(row) if row else None

    def list_runs(
        self,
        *,
        suite: str | None = None,
        prompt_version: str | None = None,
        status: str | None = None,
        tier: str | None = None,
        limit: int = 100,
    ) -> list[RunRecord]:
        query = select(runs).order_by(runs.c.started_at.desc()).limit(limit)
        for column, value in (("suite", suite), ("prompt_version", prompt_version),
                              ("status", status), ("tier", tier)):  # fmt: skip
            if value is not None:
                query = query.where(runs.c[column] == value)
        with self.engine.connect() as conn:
            return [_run(r) for r in conn.execute(query).mappings()]

    def evaluated(self) -> list[tuple[str, str]]:
        """Every suite × prompt version with a run, each once."""
        query = select(runs.c.suite, runs.c.prompt_version).distinct()
        with self.engine.connect() as conn:
            return sorted((r.suite, r.prompt_version) for r in conn.execute(query))

    def metric_history(
        self, suite: str, metric: str, *, tier: str = "full", limit: int = 60
    ) -> list[tuple[RunRecord, float, float]]:
        """(run, mean, standard error) of a metric over the suite's complete runs, oldest
        first: the trend behind the nightly chart."""
        history = []
        for run in reversed(self.list_runs(suite=suite, status="complete", tier=tier,
                                           limit=limit)):  # fmt: skip
            summary = self.read_summary(run.run_id)
            mean = summary.metric(metric) if summary else None
            if summary and mean is not None:
                se = summary.metric_se.get(metric) or 0.0
                history.append((run, float(mean), float(se)))
        return history

    def read_outputs(self, run_id: str) -> list[ItemOutput]:
        query = (
            select(item_outputs)
            .where(item_outputs.c.run_id == run_id)
            .order_by(item_outputs.c.item_id, item_outputs.c.repeat)
        )
        names = [f.name for f in fields(ItemOutput)]
        with self.engine.connect() as conn:
            return [_output({n: r[n] for n in names}) for r in conn.execute(query).mappings()]

    def read_scores(self, run_id: str) -> list[ItemScore]:
        query = (
            select(item_scores)
            .where(item_scores.c.run_id == run_id)
            .order_by(item_scores.c.item_id, item_scores.c.repeat, item_scores.c.evaluator)
        )
        names = [f.name for f in fields(ItemScore)]
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings()
            return [
                ItemScore(**({n: r[n] for n in names} | {"data_type": r["data_type"] or "NUMERIC"}))
                for r in rows
            ]

    def scores_frame(self, run_id: str) -> pd.DataFrame:
        columns = ["item_id", "repeat", "evaluator", "value", "comment"]
        return pd.DataFrame([asdict(s) for s in self.read_scores(run_id)], columns=columns)

    def read_summary(self, run_id: str) -> Summary | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(summaries.c.summary).where(summaries.c.run_id == run_id)
            ).first()
        return Summary.from_dict(row[0]) if row else None


def _output(values: dict[str, Any]) -> ItemOutput:
    """A stored output; columns an older store left empty get their defaults."""
    defaults: dict[str, Any] = {"usage": {}, "unpriced_models": []}
    return ItemOutput(**{k: defaults[k] if v is None and k in defaults else v
                         for k, v in values.items()})  # fmt: skip


def _version_order(version: str) -> tuple[int, int, str]:
    """v2 before v10; a version that is not vN (a hash) after them."""
    number = version[1:]
    return (0, int(number), "") if version[:1] == "v" and number.isdigit() else (1, 0, version)


def _run(row: Any) -> RunRecord:
    values = {f.name: row[f.name] for f in fields(RunRecord)}
    values["notes"] = values["notes"] or []  # a store from before notes existed
    values["status"] = RunStatus(values["status"])
    values["agent_versioned"] = bool(values["agent_versioned"])
    values["options"] = stored_options(values["options"])
    for key in ("started_at", "finished_at"):
        if isinstance(values[key], datetime) and values[key].tzinfo is None:
            values[key] = values[key].replace(tzinfo=UTC)  # SQLite drops the zone
    return RunRecord(**values)


def stored_options(stored: dict[str, Any] | None) -> RunOptions:
    """A run's options as stored: those this version knows (an option a newer or older
    release stored and this one does not know is left out; a missing one is the default)."""
    known = {k: v for k, v in (stored or {}).items() if k in RunOptions.model_fields}
    return RunOptions.model_validate(known)


def _insert_for(engine: Engine) -> Callable[[Table], Any]:
    """The dialect's INSERT, which has ON CONFLICT DO UPDATE on SQLite and Postgres."""
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert


def _add_missing_columns(engine: Engine) -> None:
    """Stores created by an older version lack newer nullable columns: add them in place."""
    inspector = inspect(engine)
    with engine.begin() as conn:
        for table in metadata.sorted_tables:
            present = {c["name"] for c in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name not in present and column.nullable:
                    kind = column.type.compile(dialect=engine.dialect)
                    conn.execute(
                        text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}')
                    )


def _create_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        engine = create_engine(url, pool_pre_ping=True)
        with engine.connect():
            pass  # fail now, with a clear message, rather than mid-run
        return engine
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": 30})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    return engine
