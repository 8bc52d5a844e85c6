"""The pytest plugin (the ``pytest11`` entry point of its module's name): ``pytest
--eval-suite NAME`` runs a suite of the project as ``eval-pipeline run`` does and reports
it as tests (docs/running.md, "From pytest").

- One run per suite per session, on the CLI's path (``api.prepare`` when collecting, so a
  bad project file or an unknown suite is a usage error before anything runs;
  ``api.run_prepared`` — the run service — when its first test runs). Its tests report
  from that run's results.
- One test per case of the run's tier, failing as its JUnit test case does
  (``ResultFile.item_failures``: the agent's error, a must-pass score, worse than the
  baseline), and one, ``verdict``, that fails when the run's verdict blocks (FAIL, ERROR;
  UNDECIDED unless the run's ``on_undecided`` is ``warn``). A blocking verdict fails the
  session even when every case passed, and its line ends pytest's summary.
- Under ``CI=true`` the run replays its recordings (``--replay``) unless
  ``--eval-recording`` says otherwise.
- The run options are the CLI's flags with ``--eval-`` for ``--`` (cli/run_flags.py).

A marked test function (``@pytest.mark.eval_suite(NAME, **evaluate()'s options)``) is
the same: its suite's tests in its place, the function run in the verdict test with the
result, for the team's own assertions.

Not under pytest-xdist (``-n``): a run is one process's (its own ``--eval-workers``
shares the items over processes), and each worker would run it again, so ``-n`` is
refused (``--eval-suite``: a usage error; a marked function: its module's collection
error in each worker).

The plugin is loaded by every pytest session of an environment that has the package: it
imports only what its options are declared from (cli/run_flags.py: click and pydantic,
~0.2 s) until a suite is asked for.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from eval_pipeline.core.evaluation import EvalResult
    from eval_pipeline.core.options import RunOptions
    from eval_pipeline.core.reports.result_file import ResultFile
    from eval_pipeline.service import Prepared
    from eval_pipeline.service.run import Recording

RECORDINGS = ("off", "record", "replay")
VERDICT_TEST = "verdict"


def pytest_addoption(parser: pytest.Parser) -> None:
    from eval_pipeline.cli.run_flags import FLAGS
    from eval_pipeline.core.options import RunOptions

    group = parser.getgroup("eval-pipeline", "eval-pipeline: a suite's cases and verdict as tests")
    group.addoption("--eval-suite", action="append", default=[], metavar="NAME",
                    help="Run this suite of the project (repeat for several): a test per "
                         "case and one for its verdict.")  # fmt: skip
    group.addoption("--eval-project", metavar="PATH", default=None,
                    help="The project file (default: EVAL_PROJECT, or eval-pipeline.yaml in "
                         "the working directory or a parent).")  # fmt: skip
    group.addoption("--eval-label", default="production", metavar="LABEL",
                    help="Prompt label to evaluate (ignored with --eval-prompt-version).")
    group.addoption("--eval-prompt-version", type=int, default=None, metavar="N",
                    help="Prompt version to evaluate.")
    group.addoption("--eval-recording", choices=RECORDINGS, default=None,
                    help="replay: answer every request from the recordings; record: store "
                         "them; off: call the endpoint (default: replay when CI=true, "
                         "else off).")  # fmt: skip
    for name, flag in FLAGS.items():
        described = RunOptions.model_fields[name].description or ""
        group.addoption(f"--eval-{flag[2:]}", dest=f"eval_{name}", default=None,
                        metavar=name.upper(),
                        help=f"As `eval-pipeline run {flag}`: "
                             f"{described.replace('%', '%%')}")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "eval_pipeline: a case or the verdict of a suite "
                                       "the plugin runs")  # fmt: skip
    config.addinivalue_line("markers", "eval_suite(name, **options): run this suite as "
                                       "tests, with evaluate()'s options")  # fmt: skip
    if config.getoption("eval_suite"):  # (the controller collects nothing: refused here)
        refuse_xdist(config, "--eval-suite")
    config.pluginmanager.register(Suites(config), "eval_pipeline_suites")


def refuse_xdist(config: pytest.Config, said: str) -> None:
    """A suite's run is one process's: under pytest-xdist each worker would run it again."""
    if getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        raise pytest.UsageError(
            f"{said}: a suite runs once, in one process, and cannot be shared over "
            "pytest-xdist workers: run it without -n (--eval-workers N splits the run's "
            "items over N processes)"
        )


def recording_of(config: pytest.Config) -> Recording:
    """--eval-recording, else replay under CI=true, else off."""
    chosen: Recording | None = config.getoption("eval_recording")
    if chosen is not None:
        return chosen
    return "replay" if os.environ.get("CI") == "true" else "off"


def run_options_of(config: pytest.Config, marked: dict[str, Any], said: str) -> RunOptions:
    """The run options the --eval-* flags give, converted and bounded as the CLI's flags
    are, then those a marker names; a bad value is a usage error naming the flag (or the
    marker's option) and the value."""
    import click

    from eval_pipeline.cli.run_flags import FLAGS, click_type
    from eval_pipeline.core.errors import ConfigurationError
    from eval_pipeline.core.options import RunOptions, run_options

    given: dict[str, Any] = {}
    for name, flag in FLAGS.items():
        value = config.getoption(f"eval_{name}")
        if value is None:
            continue
        try:
            given[name] = click_type(RunOptions.model_fields[name]).convert(value, None, None)
        except click.BadParameter as exc:
            raise pytest.UsageError(f"--eval-{flag[2:]} {value}: {exc.message}") from None
    try:
        return run_options(**(given | marked))
    except ConfigurationError as exc:
        raise pytest.UsageError(f"{said}: {exc}") from None


@dataclass
class Outcome:
    """A suite's run as its tests report it: the result, or why there is none."""

    result: EvalResult | None = None
    view: ResultFile | None = None
    error: str | None = None

    @property
    def blocks(self) -> bool:
        """The verdict fails the session (exit code other than 0, as the CLI's)."""
        return self.result is None or self.result.exit_code != 0

    def line(self) -> str:
        from eval_pipeline.cli.report import error_line, verdict_line

        return verdict_line(self.result) if self.result else error_line(self.error or "")


class Suites:
    """The suites this session runs (--eval-suite, @pytest.mark.eval_suite): prepared
    when collected, each run once."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.collected: list[SuiteNode] = []

    @pytest.hookimpl(tryfirst=True)  # before -k and -m deselect
    def pytest_collection_modifyitems(self, session: pytest.Session,
                                      items: list[pytest.Item]) -> None:  # fmt: skip
        for name in dict.fromkeys(self.config.getoption("eval_suite")):
            project = self.prepare(name, {}, f"--eval-suite {name}")
            node = SuiteNode.from_parent(session, name=name, prepared=project,
                                         nodeid=f"{project.env.project.path.name}::{name}",
                                         path=project.env.project.path)  # fmt: skip
            self.collected.append(node)
            found: list[pytest.Item | pytest.Collector] = list(node.collect())
            for item in found:
                session.ihook.pytest_itemcollected(item=item)
            report = pytest.CollectReport(node.nodeid, "passed", None, list(found))
            session.ihook.pytest_collectreport(report=report)  # (counted, as pytest's own)
            items.extend(i for i in found if isinstance(i, pytest.Item))

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str,
                                  obj: object) -> SuiteNode | None:  # fmt: skip
        """A test function marked ``@pytest.mark.eval_suite(NAME, **options)`` becomes the
        suite's tests; the function itself runs in its verdict test, given the result."""
        if not inspect.isfunction(obj):  # (any other object of a module may answer any
            return None  # attribute: sqlalchemy's ``func`` makes up a ``pytestmark``)
        marks = getattr(obj, "pytestmark", [])
        marker = next((m for m in marks if isinstance(m, pytest.Mark) and m.name == "eval_suite"),
                      None) if isinstance(marks, list) else None  # fmt: skip
        if marker is None:
            return None
        if len(marker.args) != 1 or not isinstance(marker.args[0], str):
            raise collector.CollectError(f"{name}: @pytest.mark.eval_suite takes the suite's "
                                         "name, then evaluate()'s options by keyword")  # fmt: skip
        try:
            said = f"{name}: @pytest.mark.eval_suite({marker.args[0]!r})"
            prepared = self.prepare(marker.args[0], dict(marker.kwargs), said)
        except pytest.UsageError as exc:
            raise collector.CollectError(str(exc)) from None
        node = SuiteNode.from_parent(collector, name=name, prepared=prepared, check=obj)
        self.collected.append(node)
        return node

    def prepare(self, name: str, marked: dict[str, Any], said: str) -> Prepared:
        """``name`` prepared as ``eval-pipeline run`` prepares it (``api.prepare``), from the
        --eval-* options and a marker's (``evaluate()``'s keywords); a problem is a usage
        error saying where the suite was named (``said``)."""
        from eval_pipeline import api
        from eval_pipeline.core.errors import EvalError

        config = self.config
        refuse_xdist(config, said)
        where = {"project": config.getoption("eval_project"),
                 "prompt_version": config.getoption("eval_prompt_version"),
                 "label": config.getoption("eval_label"),
                 "recording": recording_of(config)}  # fmt: skip
        where |= {k: marked.pop(k) for k in list(marked) if k in where}
        try:
            request = run_options_of(config, marked, said)
            return api.prepare(name, request=request, **where)
        except EvalError as exc:
            ci = ""
            if where["recording"] == "replay" and os.environ.get("CI") == "true":
                ci = " (under CI=true it replays: --eval-recording off runs live)"
            raise pytest.UsageError(f"{said}: {exc}{ci}") from None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A blocking verdict fails the session, even when every case test passed."""
        ran = [node.outcome for node in self.collected if node.outcome is not None]
        if any(o.blocks for o in ran) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        ran = [node for node in self.collected if node.outcome is not None]
        if not ran:
            return
        terminalreporter.section("eval-pipeline")
        for node in ran:
            outcome = node.outcome
            assert outcome is not None
            run = f" (run {outcome.result.run.run_id})" if outcome.result else ""
            suite = node.prepared.suite.name
            terminalreporter.write_line(f"{suite}{run}: {outcome.line()}",
                                        red=outcome.blocks, green=not outcome.blocks)  # fmt: skip


class SuiteNode(pytest.Collector):
    """One suite: a test per case of its tier, then its verdict; its run made once, by
    the first of them that runs."""

    def __init__(self, *, prepared: Prepared, check: Callable[..., Any] | None = None,
                 **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.prepared = prepared
        self.check = check  # a marked test function: run after the verdict, given the result
        self.outcome: Outcome | None = None

    def collect(self) -> list[pytest.Item]:
        items: list[pytest.Item] = [CaseItem.from_parent(self, name=case.id)
                                    for case in self.prepared.plan.cases]  # fmt: skip
        items.append(VerdictItem.from_parent(self, name=VERDICT_TEST))
        for item in items:
            item.add_marker("eval_pipeline")
        return items

    def run(self) -> Outcome:
        if self.outcome is None:
            from eval_pipeline import api
            from eval_pipeline.core.errors import EvalError
            from eval_pipeline.core.reports.result_file import ResultFile

            try:
                result = api.run_prepared(self.prepared)
                self.outcome = Outcome(result, ResultFile.of(result))
            except EvalError as exc:
                self.outcome = Outcome(error=str(exc))
        return self.outcome


class EvalFailure(Exception):
    """A case or a verdict that fails: its message is the whole report."""


class SuiteItem(pytest.Item):
    parent: SuiteNode

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:  # fmt: skip
        if isinstance(excinfo.value, EvalFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)  # (a marked function's assertion)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.parent.name}::{self.name}"


class CaseItem(SuiteItem):
    """One case: it fails as the run's JUnit test case for it does, with the same message."""

    def runtest(self) -> None:
        outcome = self.parent.run()
        if outcome.view is None:
            raise EvalFailure(f"the run failed: {outcome.error}")
        rows = [i for i in outcome.view.items if i.item_id == self.name]
        if not rows:
            stopped = outcome.view.run.stopped
            pytest.skip(f"not run{f': {stopped}' if stopped else ''}")
        for row in rows:
            for evaluator, value in row.scores.items():
                self.user_properties.append((f"{evaluator}#{row.repeat}", value))
        if (why := outcome.view.item_failures().get(self.name)) is not None:
            raise EvalFailure(why)


class VerdictItem(SuiteItem):
    """The suite's verdict: fails when it blocks, with the CLI's verdict line."""

    def runtest(self) -> None:
        outcome = self.parent.run()
        if outcome.blocks:
            raise EvalFailure(outcome.line())
        check = self.parent.check
        if check is not None and inspect.signature(check).parameters:
            check(outcome.result)  # the team's own assertions on the result
        elif check is not None:
            check()
