import os
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from eval_pipeline_tests.pg import PostgresUnavailable, fresh_database, local_cluster


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """An empty database on a real PostgreSQL server; must run (never skip) in CI."""
    with ExitStack() as stack:
        try:
            server = os.environ.get("EVAL_TEST_PG_URL") or stack.enter_context(local_cluster())
        except PostgresUnavailable as exc:
            if os.environ.get("CI") == "true":
                pytest.fail(f"Postgres tests must run in CI: {exc}")
            pytest.skip(str(exc))
        yield stack.enter_context(fresh_database(server))


@pytest.fixture(autouse=True)
def _isolated_eval_home(tmp_path_factory, monkeypatch):
    """Nothing a test writes (charts, review files, stores) lands in the checkout."""
    if "EVAL_HOME" not in os.environ:
        monkeypatch.setenv("EVAL_HOME", str(tmp_path_factory.mktemp("eval_home")))
