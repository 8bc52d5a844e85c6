"""Opening the results store's database: which URLs it takes, the engine, and the error
that names the store without its password."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError

from eval_pipeline.core.errors import ServiceError


class ResultsStoreError(ServiceError):
    """The store cannot be opened or written; the message never contains a password."""


SUPPORTED = {"sqlite": "sqlite:///path/to/results.sqlite",
             "postgresql": "postgresql+psycopg://host/db"}  # fmt: skip


def masked(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def normalise_url(url: str) -> str:
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def check_backend(url: str) -> None:
    """A URL of a database the store supports, else a message naming it and what to use
    (a mysql:// URL failed half-way into a run with ModuleNotFoundError)."""
    try:
        backend = make_url(url).get_backend_name()
    except ArgumentError:
        backend = None
    if backend not in SUPPORTED:
        raise ResultsStoreError(
            f"EVAL_RESULTS_URL={masked(url)}: the results store is SQLite or Postgres "
            f"({' or '.join(SUPPORTED.values())}), not {backend or 'this'}"
        )


def open_engine(url: str) -> Engine:
    """An engine on the store's database: Postgres connected once (fail now, with a clear
    message, rather than mid-run); SQLite in WAL mode, its folder made."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        engine = create_engine(url, pool_pre_ping=True)
        with engine.connect():
            pass
        return engine
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": 30})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        # WAL's recommended level: a commit no longer waits for the disk (one fsync per
        # item's outputs and scores); a killed process loses nothing committed, only a
        # power cut may lose the last commits, and the store is never corrupted
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    return engine


class OnEngine:
    """A piece of the store (runs, outputs, scores, verdicts, the memo, the outbox): its
    methods over the store's one engine. ``ResultsStore`` is all of them over one."""

    def __init__(self, engine: Engine):
        self.engine = engine
