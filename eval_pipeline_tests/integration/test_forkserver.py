"""The tests' fork server (forkserver.py) gives a CLI call what a fresh process gives: the
same output, exit code, working directory and environment; a timeout still kills the CLI;
and a call it cannot serve faithfully is started as written."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval_pipeline_tests import forkserver
from eval_pipeline_tests.helpers import copy_project

pytestmark = pytest.mark.skipif(not forkserver.enabled(), reason="EVAL_TEST_FORKSERVER=0")


def env_for(project: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))}
    return env | {"EVAL_HOME": str(project.parent / "home")} | more


@pytest.mark.parametrize("args", [
    ["suites"],
    ["run", "--suite", "drive_thru", "--tier", "smoke"],
    ["run", "--suite", "no_such_suite"],  # exit 2, on stderr
])  # fmt: skip
def test_a_served_call_prints_and_exits_as_a_fresh_process(tmp_path, args):
    project = copy_project(tmp_path)
    env = env_for(project)  # each its own store: the second would reuse the first's items
    assert forkserver._routed([forkserver.SCRIPT, *args], {"env": env})
    served = subprocess.run([forkserver.SCRIPT, *args], cwd=project.parent, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    env["EVAL_HOME"] += "-fresh"
    fresh = forkserver._real_run([forkserver.SCRIPT, *args], cwd=project.parent, env=env,
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
    assert served.args == [forkserver.SCRIPT, *args]

    def same(text: str) -> str:  # a run's id and its time differ from run to run
        import re

        return re.sub(r"-[0-9a-f]{12}\b|\d+(\.\d+)? ?(s|ms)\b|home(-fresh)?/", "…", text)

    assert (served.returncode, same(served.stdout), same(served.stderr)) == (
        fresh.returncode, same(fresh.stdout), same(fresh.stderr))


def test_the_call_gets_the_tests_directory_environment_and_input(tmp_path):
    project = copy_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    listed = subprocess.run([forkserver.SCRIPT, "suites"], cwd=elsewhere, capture_output=True,
                            text=True, env=env_for(project, EVAL_PROJECT=str(project)))  # fmt: skip
    assert listed.returncode == 0 and "drive_thru" in listed.stdout, listed
    nothing = subprocess.run([forkserver.SCRIPT, "suites"], cwd=elsewhere, capture_output=True,
                             text=True, env=env_for(project))  # fmt: skip
    assert nothing.returncode != 0 or "drive_thru" not in nothing.stdout, nothing


def test_a_timeout_kills_the_cli_not_only_its_shim(tmp_path):
    project = copy_project(tmp_path)
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([forkserver.SCRIPT, "run", "--suite", "research"], cwd=project.parent,
                       env=env_for(project), capture_output=True, timeout=1.5)  # fmt: skip
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _processes_in(project.parent):
        time.sleep(0.1)
    assert not _processes_in(project.parent)


def _processes_in(folder: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")) == folder:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_random_hash_seed_alternates_between_two_servers_a_fixed_one_is_fresh(tmp_path):
    env = dict(os.environ, PYTHONHASHSEED="random")
    first = forkserver._routed([forkserver.SCRIPT, "suites"], {"env": env})
    second = forkserver._routed([forkserver.SCRIPT, "suites"], {"env": env})
    assert first and second and first[4] != second[4]  # two servers' sockets
    assert all("PYTHONHASHSEED" not in s.env or s.env["PYTHONHASHSEED"] == "random"
               for s in forkserver._servers)  # fmt: skip
    fixed = dict(os.environ, PYTHONHASHSEED="0")
    assert forkserver._routed([forkserver.SCRIPT, "suites"], {"env": fixed}) is None


@pytest.mark.parametrize("change", [
    {"COLUMNS": "61"}, {"NO_COLOR": "1"}, {"PYTHONWARNINGS": "error"}, {"LC_ALL": "C"},
])  # fmt: skip
def test_what_a_fresh_interpreter_reads_at_start_gets_one(change):
    assert forkserver._routed([forkserver.SCRIPT, "suites"],
                              {"env": dict(os.environ) | change}) is None  # fmt: skip


def test_another_checkout_on_the_path_and_other_forms_are_run_as_written(tmp_path):
    (tmp_path / "eval_pipeline").mkdir()
    other = dict(os.environ, PYTHONPATH=str(tmp_path))
    assert forkserver._routed([forkserver.SCRIPT, "suites"], {"env": other}) is None
    assert forkserver._routed([sys.executable, "-m", "eval_pipeline.cli", "suites"], {}) is None
    assert forkserver._routed(f"{forkserver.SCRIPT} suites", {"shell": True}) is None


def test_a_start_up_variable_set_after_the_server_started_gets_a_fresh_interpreter(
        monkeypatch):  # fmt: skip
    assert forkserver._routed([forkserver.SCRIPT, "suites"], {})  # the server is up
    monkeypatch.setenv("PYTHONWARNINGS", "error::UserWarning")
    assert forkserver._routed([forkserver.SCRIPT, "suites"], {}) is None
