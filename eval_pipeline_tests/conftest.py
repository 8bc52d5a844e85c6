import os
import signal
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from eval_pipeline_tests import forkserver
from eval_pipeline_tests.helpers import clean_cli_env, copy_project
from eval_pipeline_tests.pg import PostgresUnavailable, fresh_database, local_cluster

# `--cpu-report N`: the tests and modules that cost the most CPU (cpu_report.py)
pytest_plugins = ["eval_pipeline_tests.cpu_report"]


def pytest_configure(config):
    """Reports as wide wherever the tests run, before anything imports the CLI: rich fixes
    a console's width when it is made, from COLUMNS (80 in a pytest-xdist worker, which
    sets it) or the terminal (none in a CI log)."""
    os.environ["COLUMNS"] = "240"
    # The tests' own modules (the zoo, toy agents, crash targets) are not installed (the
    # wheel holds eval_pipeline only): processes the tests start find them here.
    root = str(Path(__file__).resolve().parents[1])
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([p for p in paths if p] + [root])
    # A CLI call a test runs to its end is forked from a warm process (forkserver.py).
    forkserver.install()
    # The tests that interrupt a run send it SIGINT. A suite started in the background by a
    # non-interactive shell (`pytest … &`) inherits SIGINT ignored, and so would every
    # process it starts: the CLI would never see the signal (found by running the suite so).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_unconfigure(config):
    forkserver.uninstall()


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker more than the cores. Some tests wait on a daemon's tick, a
    model server's latency or a Postgres outage; with a worker per core the cores idled
    a third of the time (2 cores: 1,004 s with two workers; 876 s and 95% busy with three,
    nothing else changed but the benchmark scripts and the docs' shell commands served)."""
    return len(os.sched_getaffinity(0)) + 1


TIERS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(items):
    """Each test's tier is the folder its module is in (unit/, integration/, e2e/), marked
    so ``-m unit`` selects it; a test marked ``slow`` in a unit module (a long simulation, a
    process it starts) counts as integration, so the unit tier stays under a minute.

    pytest-xdist hands out tests one by one (``--dist loadgroup``, pyproject.toml): a
    module per worker left one worker with the benchmarks' 15 tests (7 min) at the end.
    The tests of a module that share a module-scoped fixture (a flow followed once, then
    checked by several tests) stay on one worker, so it runs once."""
    for item in items:
        tier = item.path.parent.name
        assert tier in TIERS, f"{item.path}: a test module belongs in one of {TIERS}"
        if tier == "unit" and item.get_closest_marker("slow"):
            tier = "integration"
        item.add_marker(tier)
        if _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(fixture.scope == "module"
                                    for fixtures in info.name2fixturedefs.values()
                                    for fixture in fixtures)  # fmt: skip


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A real PostgreSQL server (EVAL_TEST_PG_URL or a throwaway local cluster); must run
    (never skip) in CI."""
    with ExitStack() as stack:
        try:
            server = os.environ.get("EVAL_TEST_PG_URL") or stack.enter_context(local_cluster())
        except PostgresUnavailable as exc:
            if os.environ.get("CI") == "true":
                pytest.fail(f"Postgres tests must run in CI: {exc}")
            pytest.skip(str(exc))
        yield server


@pytest.fixture(scope="session")
def pg_url(pg_server) -> Iterator[str]:
    """An empty database on that server, shared by the session's store tests."""
    with fresh_database(pg_server) as url:
        yield url


@pytest.fixture(autouse=True)
def _isolated_eval_home(tmp_path_factory, monkeypatch):
    """Nothing a test writes (charts, review files, stores) lands in the checkout."""
    if "EVAL_HOME" not in os.environ:
        monkeypatch.setenv("EVAL_HOME", str(tmp_path_factory.mktemp("eval_home")))


@pytest.fixture(autouse=True)
def _project_not_leaked():
    """EVAL_PROJECT is as it was before each test: the demo and the repository's code
    location set it in their own process (settings.fall_back_to_examples), and a test that
    ran them in this one must not decide which project the next test finds."""
    before = os.environ.get("EVAL_PROJECT")
    yield
    if before is None:
        os.environ.pop("EVAL_PROJECT", None)
    else:
        os.environ["EVAL_PROJECT"] = before


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A copy of this repository's project (the examples), the CLI pointed at it (a module
    with a project of its own defines its own ``project``)."""
    path = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path / "home", path)
    return path
