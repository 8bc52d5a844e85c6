"""The pytest plugin's declaration: the entry point pip registers names the plugin module,
and its options are the CLI's run flags (e2e/test_pytest_plugin.py runs it).

The shared environment was installed before the entry point existed, so these tests load
the plugin by its module name; that pip registers it is seen only in a fresh install."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

from eval_pipeline.cli.run import run
from eval_pipeline.cli.run_flags import FLAGS

pytest_plugins = ["pytester"]

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_entry_point_names_the_plugin():
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["pytest11"]
    # named as its module: pytest registers ``-p eval_pipeline.pytest_plugin`` (these
    # tests) under that name, then skips the entry point of that name; under another name
    # pluggy refuses the module registered twice
    assert declared == {"eval_pipeline.pytest_plugin": "eval_pipeline.pytest_plugin"}
    plugin = importlib.import_module(declared["eval_pipeline.pytest_plugin"])
    for hook in ("pytest_addoption", "pytest_configure"):
        assert callable(getattr(plugin, hook)), hook


def test_the_plugin_offers_every_run_flag_of_the_cli(pytester):
    cli = {p.opts[0] for p in run.params if p.name in FLAGS}
    assert cli == set(FLAGS.values())  # the CLI's run flags are the table's
    shown = pytester.runpytest_inprocess("-p", "eval_pipeline.pytest_plugin", "--help")
    text = shown.stdout.str()
    for flag in ["--suite", "--project", "--label", "--prompt-version", *FLAGS.values()]:
        assert f"--eval-{flag[2:]}" in text, flag
    assert "default: replay when CI=true" in " ".join(text.split())


def test_the_plugin_leaves_a_teams_own_tests_as_they_are(pytester):
    """Loaded by every pytest session where the package is installed, the plugin looks at
    each object a test module holds: one that makes up any attribute asked for
    (sqlalchemy's ``func``: its ``pytestmark`` is not a list of marks) broke the module's
    collection (TypeError; CI's fresh install, test_crash_recovery)."""
    pytester.makepyfile(test_team="""
        from sqlalchemy import func


        def test_plain():
            assert func.count is not None
    """)
    result = pytester.runpytest_inprocess("-p", "eval_pipeline.pytest_plugin", "-q")
    result.assert_outcomes(passed=1)
