"""Bad input that must not hurt: each file in bad_inputs/ replaces drive_thru's cases and
``eval-pipeline run`` refuses it in well under a second, exit 2, naming the file and the
line (each file's first line says what it expects: ``# expect: [line N: ]message``); each
file in bad_inputs/setups/ changes a copy of the examples (the project file, a prompt, the
labels, a plugin, the environment) and the run refuses that, exit 2, saying ``expect``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline_tests.helpers import CONFIG_ENV, clean_cli_env, copy_project

FILES = sorted((Path(__file__).parents[1] / "bad_inputs").glob("*.yaml"))


@pytest.mark.parametrize("bad", FILES, ids=[f.stem for f in FILES])
def test_a_bad_cases_file_is_refused_naming_the_file_and_line(bad, tmp_path, monkeypatch):
    project = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    cases = project.parent / "datasets" / "drive_thru" / "cases.yaml"
    text = bad.read_text()
    cases.write_text(text)
    expected = text.splitlines()[0].removeprefix("# expect: ")
    line, message = expected.split(": ", 1) if expected.startswith("line ") else ("", expected)
    started = time.perf_counter()
    done = CliRunner().invoke(main, ["run", "--suite", "drive_thru"], terminal_width=400)
    assert time.perf_counter() - started < 20
    said = " ".join(done.output.split())
    assert done.exit_code == 2, done.output
    assert message in said, said
    where = f"cases.yaml:{line.removeprefix('line ')}" if line else "cases.yaml"
    assert where in said, said


SETUPS = sorted((Path(__file__).parents[1] / "bad_inputs" / "setups").glob("*.yaml"))
CLI = str(Path(sys.executable).parent / "eval-pipeline")


def _walk(data: Any, dotted: str) -> tuple[Any, Any]:
    """The container holding ``dotted``'s last part, and that part (an int for a list)."""
    *parents, last = dotted.split(".")
    for part in parents:
        data = data[int(part)] if isinstance(data, list) else data.setdefault(part, {})
    return data, int(last) if isinstance(data, list) else last


def apply_setup(setup: dict[str, Any], root: Path) -> dict[str, str]:
    """A setup's changes to a copy of the examples (``set``/``append`` in the project file
    at a dotted path, ``replace`` text in a file, ``files`` written, ``latin1`` text
    appended in Latin-1); its ``env``."""
    project_file = root / "eval-pipeline.yaml"
    project = yaml.safe_load(project_file.read_text())
    for dotted, value in (setup.get("set") or {}).items():
        holder, key = _walk(project, dotted)
        holder[key] = value
    for dotted, value in (setup.get("append") or {}).items():
        holder, key = _walk(project, dotted)
        holder[key].append(value)
    project_file.write_text(yaml.safe_dump(project, sort_keys=False))
    for name, (old, new) in (setup.get("replace") or {}).items():
        path = root / name
        assert old in path.read_text(), f"{name} holds no {old!r}"
        path.write_text(path.read_text().replace(old, new, 1))
    for name, text in (setup.get("files") or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name, text in (setup.get("latin1") or {}).items():  # appended, not UTF-8
        path = root / name
        path.write_bytes(path.read_bytes() + text.encode("latin-1"))
    return setup.get("env") or {}


@pytest.mark.parametrize("setup_file", SETUPS, ids=[f.stem for f in SETUPS])
def test_a_bad_setting_is_refused_naming_where_it_is(setup_file, tmp_path):
    """Each was a traceback with exit 1 (CI reads 1 as a regression), or accepted silently:
    now exit 2 before anything runs, naming the file, the field and the value. Run as a
    team runs it: the CLI in a process of its own, from a copy of the examples."""
    setup = yaml.safe_load(setup_file.read_text())
    root = copy_project(tmp_path).parent
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    env |= {"EVAL_HOME": str(tmp_path / "home")} | apply_setup(setup, root)
    args = [CLI, "run", "--suite", "drive_thru", "--tier", "smoke", *setup.get("args", [])]
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, said
    assert setup["expect"] in said, said
    assert "Traceback" not in said


def test_an_agent_that_exits_fails_its_items_instead_of_hanging_the_run(tmp_path):
    """sys.exit(0) in the agent hung the run past five minutes (the exit escaped the item
    into the event loop); it is now the agent's failure on each item, as any exception."""
    root = copy_project(tmp_path).parent
    apply_setup({"set": {"suites.drive_thru.agent": "eval_examples.quitter:answer"},
                 "files": {"eval_examples/quitter.py": "import sys\n\n\ndef answer(input, "
                           "ctx):\n    sys.exit(0)\n"}}, root)  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    done = subprocess.run([CLI, "run", "--suite", "drive_thru", "--tier", "smoke", "--json",
                           "out.json"], cwd=root, env=env | {"EVAL_HOME": str(tmp_path / "h")},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "agent_errors" in done.stdout.strip().splitlines()[-1]
    items = json.loads((root / "out.json").read_text())["items"]
    assert items and all(o["error_kind"] == "SystemExit" and o["fault"] == "agent" for o in items)


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_stops_a_run_as_sigint_does(sig, code, tmp_path):
    """SIGTERM (what CI runners and Kubernetes send) killed the run with no message and no
    verdict line; now it stops as Ctrl-C does: the message names the signal, the last line
    is the verdict, exit 143 (128 + 15), and the run left running is marked abandoned by
    the next run, what it finished kept."""
    root = copy_project(tmp_path).parent
    apply_setup({"set": {"suites.drive_thru.agent": "eval_examples.slow:answer"},
                 "files": {"eval_examples/slow.py": "import pathlib, time\n\n\ndef answer("
                           "input, ctx):\n    pathlib.Path('started').touch()\n"
                           "    time.sleep(8)\n    return {}\n"}}, root)  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    env |= {"EVAL_HOME": str(tmp_path / "h")}
    args = [CLI, "run", "--suite", "drive_thru", "--tier", "smoke"]
    proc = subprocess.Popen(args, cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not (root / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, (out, err)
    assert f"interrupted ({sig.name})" in err, err
    assert out.splitlines()[-1].startswith("VERDICT: ERROR — interrupted"), out
    assert "Traceback" not in out + err
    (root / "eval_examples" / "slow.py").write_text("def answer(input, ctx):\n    return {}\n")
    # (a thread cannot be stopped: the run ends when the item's sleep does, as with SIGINT)
    again = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert "marked abandoned" in again.stdout + again.stderr, again.stdout + again.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("flag", ["--json", "--junit", "--report"])
def test_an_output_file_that_cannot_be_written_after_the_run_is_exit_2(flag, tmp_path):
    """A full disk after the run was stored was a traceback, exit 1 ("the agent got
    worse"): now exit 2 naming the flag, the file and the OS error; the run stays stored and
    its verdict is printed before the error's."""
    root = copy_project(tmp_path).parent
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    env |= {"EVAL_HOME": str(tmp_path / "h")}
    done = subprocess.run([CLI, "run", "--suite", "drive_thru", "--tier", "smoke", flag,
                           "/dev/full"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, said
    assert f"{flag} /dev/full: cannot be written (No space left on device)" in said, said
    assert "Traceback" not in said
    lines = done.stdout.strip().splitlines()
    assert lines[-2].startswith("VERDICT: PASS") and lines[-1].startswith("VERDICT: ERROR")
    listed = subprocess.run([CLI, "runs", "list", "--suite", "drive_thru"], cwd=root, env=env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "drive_thru-v1-" in listed.stdout, listed.stdout + listed.stderr
