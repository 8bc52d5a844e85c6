"""``pytest --cpu-report N``: the CPU each test cost, robust to a loaded machine.

Per test (setup, call and teardown): this process's CPU (``time.process_time``) plus the
CPU of the processes it started and waited for (``getrusage(RUSAGE_CHILDREN)``, user +
sys), and its wall time. Under pytest-xdist each worker measures its own tests and sends
the numbers with the teardown report; whoever prints the summary (the controller, or the
one process without xdist) lists the N costliest tests and every module's total. A
session- or module-scoped fixture counts in the first test that uses it. Processes a test
started and did not wait for (a daemon killed at teardown) are not counted.

Name the tests' folder (``pytest -n auto --cpu-report 30 eval_pipeline_tests``): pytest
reads the conftest that defines the option before parsing options only for the paths it is
given (not for ``testpaths``).
"""

import resource
import time
from collections import defaultdict

import pytest

from eval_pipeline_tests import forkserver

_KEY = "cpu_report"
_started = pytest.StashKey[tuple[float, float, float]]()
_costs = pytest.StashKey[dict[str, tuple[float, float, float]]]()


def pytest_addoption(parser):
    parser.addoption(
        "--cpu-report", type=int, default=0, metavar="N",
        help="print the N tests that cost the most CPU (own + waited-for subprocesses) "
             "and each module's total",
    )


def _children_cpu() -> float:
    """Waited-for subprocesses, and the CLI calls the fork server ran (forkserver.py)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + forkserver.forked_cpu()


def _enabled(config) -> bool:
    return bool(config.getoption("--cpu-report"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _enabled(item.config):
        item.stash[_started] = (time.process_time(), _children_cpu(), time.perf_counter())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when != "teardown" or not _enabled(item.config) or _started not in item.stash:
        return
    own, children, wall = item.stash[_started]
    cost = (time.process_time() - own, _children_cpu() - children, time.perf_counter() - wall)
    outcome.get_result().user_properties.append((_KEY, cost))


def pytest_runtest_logreport(report):
    if report.when != "teardown":
        return
    for name, value in report.user_properties:
        if name == _KEY:
            _COSTS[report.nodeid] = tuple(value)


_COSTS: dict[str, tuple[float, ...]] = {}


def pytest_terminal_summary(terminalreporter, config):
    top = config.getoption("--cpu-report")
    if not top or not _COSTS:
        return
    write = terminalreporter.write_line
    total = sum(own + kids for own, kids, _ in _COSTS.values())
    terminalreporter.section(f"CPU per test (own + waited-for subprocesses), top {top}")
    write(f"{'cpu s':>8} {'own s':>8} {'subproc':>8} {'wall s':>8}  test")
    ranked = sorted(_COSTS.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    for nodeid, (own, kids, wall) in ranked[:top]:
        write(f"{own + kids:8.1f} {own:8.1f} {kids:8.1f} {wall:8.1f}  {nodeid}")
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for nodeid, (own, kids, wall) in _COSTS.items():
        row = modules[nodeid.split("::")[0]]
        row[0] += own + kids
        row[1] += own
        row[2] += wall
        row[3] += 1
    terminalreporter.section("CPU per module")
    write(f"{'cpu s':>8} {'own s':>8} {'wall s':>8} {'tests':>6}  module")
    for module, (cpu, own, wall, count) in sorted(modules.items(), key=lambda kv: -kv[1][0]):
        write(f"{cpu:8.1f} {own:8.1f} {wall:8.1f} {count:6d}  {module}")
    write(f"total: {total / 60:.1f} CPU minutes in {len(_COSTS)} tests "
          f"(collection and worker start-up not counted)")
