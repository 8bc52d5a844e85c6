"""The results store's schema brought up to date when a store is opened (Alembic).

The migrations are modules in ``migrations/versions/``; the configuration is built here
(no alembic.ini). A store written before them (no version table) is migrated from the
first, which creates only the tables it lacks; the second adds the columns a store of an
older release lacks; nothing is dropped. The version is kept in its own table
(``results_store_version``), apart from Dagster's ``alembic_version`` should the two share
a Postgres database.

Two processes opening one store at once: one migrates, the other waits for it and finds
the store up to date (SQLite: ``BEGIN IMMEDIATE``, the database's write lock; Postgres: a
transaction-scoped advisory lock). A store already up to date is checked without a lock,
and without importing Alembic (~0.2 s of CPU, in every command that opens a store): its
version row read with SQL against the head the migration modules declare.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, text
from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "results_store_version"
_PG_LOCK = 4_517_002  # the advisory lock key of this store's migrations (any constant)


def _config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


@cache
def _revisions() -> tuple[str, frozenset[str]]:
    """The head revision and every revision this release knows."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_config())
    head = script.get_current_head()
    assert head is not None
    return head, frozenset(s.revision for s in script.walk_revisions())


@cache
def declared_head() -> str | None:
    """The head as the migration modules declare it (``revision = …``, ``down_revision =
    …``), read without importing them or Alembic: the one revision none follows (None if
    not exactly one, and the check takes Alembic's way)."""
    revisions, follows = set(), set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                names = {t.id for t in node.targets if isinstance(t, ast.Name)}
                value = node.value.value
                if "revision" in names and isinstance(value, str):
                    revisions.add(value)
                if "down_revision" in names and isinstance(value, str):
                    follows.add(value)
    heads = revisions - follows
    return heads.pop() if len(heads) == 1 else None


def _up_to_date(conn: Connection) -> bool:
    """The store's version row is the declared head (read with SQL alone)."""
    head = declared_head()
    if head is None or not inspect(conn).has_table(VERSION_TABLE):
        return False
    stored = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    return stored == [head]


def _current(conn: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    options = {"version_table": VERSION_TABLE}
    return MigrationContext.configure(conn, opts=options).get_current_revision()


def upgrade(engine: Engine) -> None:
    """Apply the migrations the store lacks. A store a newer release migrated further is
    left as it is (its extra columns are ignored, as before there were migrations)."""
    with engine.connect() as conn:
        if _up_to_date(conn):
            return
    from alembic import command

    head, known = _revisions()
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
