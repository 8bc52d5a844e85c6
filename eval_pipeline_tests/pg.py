"""A real PostgreSQL server for tests: EVAL_TEST_PG_URL, else a throwaway local cluster."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

HOW_TO_FIX = (
    "install the PostgreSQL server binaries (apt-get install postgresql) or set "
    "EVAL_TEST_PG_URL=postgresql://user:password@host:port/db"
)


class PostgresUnavailable(RuntimeError):
    pass


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres_user(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its binaries as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@dataclass(frozen=True)
class Cluster:
    """A throwaway local cluster a test may stop and start again (a Postgres outage)."""

    url: str
    pg_ctl: str
    data: Path
    options: str
    log: Path

    def stop(self) -> None:
        """Stop the server as an outage would: connections are dropped, new ones refused."""
        subprocess.run(_as_postgres_user([self.pg_ctl, "-D", str(self.data), "-m", "immediate",
                                          "-w", "stop"]), check=True, capture_output=True,
                       timeout=60)  # fmt: skip

    def start(self) -> None:
        subprocess.run(_as_postgres_user([self.pg_ctl, "-D", str(self.data), "-o", self.options,
                                          "-l", str(self.log), "-w", "-t", "60", "start"]),
                       check=True, capture_output=True, timeout=90)  # fmt: skip


@contextmanager
def local_cluster() -> Iterator[str]:
    """initdb + pg_ctl a cluster on 127.0.0.1 and a free port; yields a server URL."""
    with own_cluster() as cluster:
        yield cluster.url


@contextmanager
def own_cluster() -> Iterator[Cluster]:
    """initdb + pg_ctl a cluster on 127.0.0.1 and a free port, for this test alone."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not (initdb and pg_ctl):
        raise PostgresUnavailable(f"no initdb/pg_ctl found: {HOW_TO_FIX}")
    root = Path(tempfile.mkdtemp(prefix="eval-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    port = _free_port()
    log = root / "server.log"
    options = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off"
    cluster = Cluster(f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", pg_ctl, data,
                      options, log)  # fmt: skip
    try:
        try:
            subprocess.run(
                _as_postgres_user([initdb, "-D", str(data), "-A", "trust", "-U", "postgres",
                                   "-E", "UTF8", "--no-sync"]),
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            cluster.start()
        except subprocess.CalledProcessError as exc:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise PostgresUnavailable(
                f"could not start PostgreSQL: {exc.stderr.decode(errors='replace')}\n{tail}"
            ) from exc
        yield cluster
    finally:
        subprocess.run(
            _as_postgres_user([pg_ctl, "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True, timeout=60,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def fresh_database(server_url: str) -> Iterator[str]:
    """Create a uniquely named database on the server; drop it afterwards."""
    name = f"eval_test_{uuid.uuid4().hex[:10]}"
    url = make_url(server_url.replace("postgresql://", "postgresql+psycopg://", 1))
    admin = create_engine(url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)  # (outages)
    deadline = time.monotonic() + 30
    while True:
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def dagster_pg_env(database_url: str) -> dict[str, str]:
    """The DAGSTER_PG_* variables deploy/dagster.yaml reads, for one database."""
    url = make_url(database_url)
    return {
        "DAGSTER_PG_USERNAME": url.username or "",
        "DAGSTER_PG_PASSWORD": url.password or "",
        "DAGSTER_PG_HOST": url.host or "127.0.0.1",
        "DAGSTER_PG_PORT": str(url.port or 5432),
        "DAGSTER_PG_DB": url.database or "",
    }
