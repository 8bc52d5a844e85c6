"""The results store's schema brought up to date when a store is opened (Alembic).

The migrations are modules in ``migrations/versions/``; the configuration is built here
(no alembic.ini). A store written before them (no version table) is migrated from the
first, which creates only the tables it lacks; the second adds the columns a store of an
older release lacks; nothing is dropped. The version is kept in its own table
(``results_store_version``), apart from Dagster's ``alembic_version`` should the two share
a Postgres database.

Two processes opening one store at once: one migrates, the other waits for it and finds
the store up to date (SQLite: ``BEGIN IMMEDIATE``, the database's write lock; Postgres: a
transaction-scoped advisory lock). A store already up to date is checked without a lock.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text
from sqlalchemy.engine import Engine

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "results_store_version"
_PG_LOCK = 4_517_002  # the advisory lock key of this store's migrations (any constant)


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


@cache
def _revisions() -> tuple[str, frozenset[str]]:
    """The head revision and every revision this release knows."""
    script = ScriptDirectory.from_config(_config())
    head = script.get_current_head()
    assert head is not None
    return head, frozenset(s.revision for s in script.walk_revisions())


def _current(conn: Connection) -> str | None:
    options = {"version_table": VERSION_TABLE}
    return MigrationContext.configure(conn, opts=options).get_current_revision()


def upgrade(engine: Engine) -> None:
    """Apply the migrations the store lacks. A store a newer release migrated further is
    left as it is (its extra columns are ignored, as before there were migrations)."""
    head, known = _revisions()
    with engine.connect() as conn:
        if _current(conn) == head:
            return
    with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.execute(text(f"SELECT pg_advisory_xact_lock({_PG_LOCK})"))
        current = _current(conn)
        if current == head or (current is not None and current not in known):
            return
        config = _config()
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
