"""The tests' fork server (forkserver.py) gives a CLI call what a fresh process gives: the
same output, exit code, working directory and environment; a timeout still kills the CLI;
and a call it cannot serve faithfully is started as written."""

import os
import socket
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
    # The model endpoint takes connections and never answers: the run cannot finish before
    # the timeout however fast the machine (an offline run of a suite once did, in CI).
    with socket.create_server(("127.0.0.1", 0), backlog=64) as silent:
        port = silent.getsockname()[1]
        env = env_for(project, EVAL_LLM_BASE_URL=f"http://127.0.0.1:{port}/v1",
                      EVAL_LLM_API_KEY="sk-silent", EVAL_LLM_MODEL="gpt-4o-mini")  # fmt: skip
        with pytest.raises(subprocess.TimeoutExpired):
            subprocess.run([forkserver.SCRIPT, "run", "--suite", "research"],
                           cwd=project.parent, env=env, capture_output=True, timeout=3)  # fmt: skip
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
    assert first and second and first[1][4] != second[1][4]  # two servers' sockets
    assert all("PYTHONHASHSEED" not in s.env or s.env["PYTHONHASHSEED"] == "random"
               for pool in forkserver._servers.values() for s in pool)  # fmt: skip
    fixed = dict(os.environ, PYTHONHASHSEED="0")
    assert forkserver._routed([forkserver.SCRIPT, "suites"], {"env": fixed}) is None


@pytest.mark.parametrize("change", [
    {"COLUMNS": "61"}, {"NO_COLOR": "1"}, {"PYTHONWARNINGS": "error"}, {"LC_ALL": "C"},
])  # fmt: skip
def test_what_a_fresh_interpreter_reads_at_start_is_what_its_server_starts_with(
        monkeypatch, change):  # fmt: skip
    call = dict(os.environ) | change
    started = forkserver._server_env(call)
    assert {k: started.get(k) for k in change} == change
    assert not forkserver._needs_a_fresh_interpreter(call, started)
    assert forkserver._needs_a_fresh_interpreter(dict(os.environ), started)
    monkeypatch.setenv("COLUMNS", "97")  # this process's own start-up value is not passed on
    without = {k: v for k, v in call.items() if k != "COLUMNS"}
    assert "COLUMNS" not in forkserver._server_env(without)


def test_a_served_call_with_its_own_columns_wraps_as_a_fresh_one(tmp_path):
    project = copy_project(tmp_path)
    env = env_for(project, COLUMNS="61")
    served = subprocess.run([forkserver.SCRIPT, "suites"], cwd=project.parent, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    fresh = forkserver._real_run([forkserver.SCRIPT, "suites"], cwd=project.parent, env=env,
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
    assert forkserver._routed([forkserver.SCRIPT, "suites"], {"env": env})
    assert (served.returncode, served.stdout) == (fresh.returncode, fresh.stdout)
    assert max(map(len, served.stdout.splitlines())) <= 61


def test_another_checkout_on_the_path_and_other_forms_are_run_as_written(tmp_path):
    (tmp_path / "eval_pipeline").mkdir()
    other = dict(os.environ, PYTHONPATH=str(tmp_path))
    assert forkserver._routed([forkserver.SCRIPT, "suites"], {"env": other}) is None
    assert forkserver._routed([sys.executable, "-m", "eval_pipeline.cli", "suites"], {}) is None
    assert forkserver._routed(f"{forkserver.SCRIPT} suites", {"shell": True}) is None


def test_a_start_up_variable_set_after_the_server_started_gets_a_server_of_its_own(
        monkeypatch):  # fmt: skip
    before = forkserver._routed([forkserver.SCRIPT, "suites"], {})  # the server is up
    monkeypatch.setenv("PYTHONWARNINGS", "error::UserWarning")
    after = forkserver._routed([forkserver.SCRIPT, "suites"], {})
    assert before and (after is None or after[1][4] != before[1][4])


def test_a_pytest_session_is_served_as_python_m_pytest_runs_it(tmp_path):
    """``python -m pytest`` in a project: its directory first on the path (a module there
    is importable), its conftest and the plugin loaded, the session's exit code kept."""
    (tmp_path / "helper.py").write_text("VALUE = 41\n")
    (tmp_path / "conftest.py").write_text("import pytest\n\n@pytest.fixture\ndef one():\n"
                                          "    return 1\n")  # fmt: skip
    (tmp_path / "test_here.py").write_text(
        "import sys\nfrom helper import VALUE\n\n"
        "def test_sum(one):\n    assert VALUE + one == 42\n\n"
        "def test_path():\n    assert sys.path[0] == __import__('os').getcwd()\n\n"
        "def test_fails():\n    assert False, 'as asked'\n"
    )  # fmt: skip
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    assert forkserver._routed(command, {})
    served = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    fresh = forkserver._real_run(command, cwd=tmp_path, capture_output=True, text=True,
                                 timeout=120)  # fmt: skip
    assert served.returncode == fresh.returncode == 1, served.stdout + served.stderr
    for ran in (served, fresh):
        assert "1 failed, 2 passed" in ran.stdout and "as asked" in ran.stdout, ran.stdout
    assert forkserver._routed([sys.executable, "-m", "pip", "list"], {}) is None


def test_a_shell_commands_cli_calls_are_served_unless_its_environment_no_longer_fits(tmp_path):
    """`bash -c` (the docs' commands): each `eval-pipeline` the shell finds on its PATH is
    served while the shell's environment fits a server; after `export PYTHONHASHSEED=0`
    the real script runs. Either way it prints what a fresh process prints."""
    project = copy_project(tmp_path)
    env = env_for(project)
    env["PATH"] = f"{Path(forkserver.SCRIPT).parent}{os.pathsep}{env.get('PATH', '')}"
    fresh = forkserver._real_run([forkserver.SCRIPT, "suites"], cwd=project.parent, env=env,
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
    script = "eval-pipeline suites && echo done"
    (server,) = forkserver._shell_servers(["bash", "-c", script], {"env": env})
    before = server.forked_cpu()
    served = subprocess.run(["bash", "-c", script], cwd=project.parent, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert served.returncode == 0, served.stderr
    assert served.stdout == fresh.stdout + "done\n"
    assert server.forked_cpu() > before  # (a fork of the server ran it)

    before = server.forked_cpu()
    pinned = subprocess.run(["bash", "-c", "export PYTHONHASHSEED=0; eval-pipeline suites"],
                            cwd=project.parent, env=env, capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert (pinned.returncode, pinned.stdout) == (0, fresh.stdout)
    assert server.forked_cpu() == before  # the real script ran


def test_a_venv_views_script_called_by_path_is_served_and_the_rest_of_the_venv_works(tmp_path):
    """The CI workflow's steps call `.venv/bin/eval-pipeline` by its path, in a workspace
    whose `.venv` is this environment (`venv_view`): served, with the PATH finding no CLI;
    run bare (no served shell) it is the real script; the venv's python is this one."""
    project = copy_project(tmp_path)
    env = env_for(project)
    env["PATH"] = "/usr/bin:/bin"  # (no eval-pipeline on it)
    forkserver.venv_view(project.parent / ".venv")
    fresh = forkserver._real_run([forkserver.SCRIPT, "suites"], cwd=project.parent, env=env,
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
    script = ".venv/bin/eval-pipeline suites && .venv/bin/python -c 'import eval_pipeline'"
    (server,) = forkserver._shell_servers(["bash", "-c", script], {"env": env,
                                                                   "cwd": project.parent})
    before = server.forked_cpu()
    served = subprocess.run(["bash", "-c", script], cwd=project.parent, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert (served.returncode, served.stdout) == (0, fresh.stdout), served.stderr
    assert server.forked_cpu() > before  # (a fork of the server ran it)
    # not on the PATH: a bare `eval-pipeline` is still not found
    missing = subprocess.run(["bash", "-c", "eval-pipeline suites"], cwd=project.parent,
                             env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert missing.returncode == 127, missing.stderr

    before = server.forked_cpu()
    bare = forkserver._real_run([str(project.parent / ".venv/bin/eval-pipeline"), "suites"],
                                cwd=project.parent, env=env, capture_output=True, text=True,
                                timeout=120)  # fmt: skip
    assert (bare.returncode, bare.stdout) == (0, fresh.stdout)
    assert server.forked_cpu() == before  # the real script ran


def test_a_shell_with_a_random_hash_seed_alternates_between_two_servers(tmp_path):
    project = copy_project(tmp_path)
    env = env_for(project, PYTHONHASHSEED="random")
    env["PATH"] = f"{Path(forkserver.SCRIPT).parent}{os.pathsep}{env.get('PATH', '')}"
    servers = forkserver._shell_servers(["bash", "-c", ""], {"env": env})
    assert len(servers) == 2 and servers[0] is not servers[1]
    seeds = 'eval-pipeline suites >/dev/null; ' * 2
    before = [s.forked_cpu() for s in servers]
    subprocess.run(["bash", "-c", seeds], cwd=project.parent, env=env, check=True, timeout=120)
    assert all(s.forked_cpu() > b for s, b in zip(servers, before, strict=True))


def test_a_benchmark_script_is_served_as_python_runs_it(tmp_path):
    script = str(forkserver.SCRIPTS[0] / "repeats.py")
    args = [sys.executable, script, "--runs", "2", "--cases", "20"]
    assert forkserver._routed(args, {})[1][5] == f"path:{script}"
    served = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    fresh = forkserver._real_run(args, capture_output=True, text=True, timeout=120,
                                 cwd=tmp_path)  # fmt: skip
    assert served.returncode == fresh.returncode == 0, served.stderr

    def table(text: str) -> list[str]:  # (its last line says how long it took)
        return text.splitlines()[:-1]

    assert table(served.stdout) == table(fresh.stdout)
