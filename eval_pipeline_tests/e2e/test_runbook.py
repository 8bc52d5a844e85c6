"""docs/deployment.md's runbook, run as the page prints it: the commands are read from the
page's bash blocks (not a copy) and run in order, from a folder outside the repository,
against a throwaway Postgres: the roles and databases, the instance file, the daemon and
the webserver as processes, the liveness checks, the nightly now, the upgrade's
migrations, the shared-storage instance file. What the test supplies is what the page's
environment file holds (its values for this machine: the Postgres port, a free port for
the webserver instead of 3000) and a project of one suite, so the sensor's first tick
queues two runs, not ten. The `systemctl` lines need systemd: the unit files they install
are checked against the page's commands instead."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance, DagsterRunStatus
from sqlalchemy.engine import make_url

from eval_pipeline_tests.e2e.test_readme import doc_block
from eval_pipeline_tests.helpers import ROOT, copy_project
from eval_pipeline_tests.pg import dagster_pg_env

PAGE = ROOT / "docs" / "deployment.md"
BIN = Path(sys.executable).parent
UNITS = ROOT / "deploy" / "systemd"
DONE = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
INSTALLED = "/opt/eval-pipeline"  # where the unit files expect the project ($APP)


def block(heading: str) -> list[str]:
    return doc_block(heading, PAGE)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def one_suite_project(tmp_path: Path) -> Path:
    """The examples' project with drive_thru only (its prompt has production and staging)."""
    path = copy_project(tmp_path)
    config = yaml.safe_load(path.read_text())
    config["suites"] = {"drive_thru": config["suites"]["drive_thru"]}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def the_environment_file(tmp_path: Path, server: str, project: Path) -> dict[str, str]:
    """The page's environment file, with this machine's values; the superuser's PG* too."""
    url = make_url(server)
    host, port = url.host or "127.0.0.1", str(url.port or 5432)
    ours = ("EVAL_", "LANGFUSE_", "OPENAI_", "DAGSTER_", "AWS_", "PG")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    return env | {
        "PATH": f"{BIN}:{env.get('PATH', '')}",
        "PGHOST": host, "PGPORT": port, "PGUSER": url.username or "postgres",
        "DAGSTER_PG_PASSWORD": "dagster-pw", "EVAL_PG_PASSWORD": "eval-pw",
        "DAGSTER_HOME": str(tmp_path / "var" / "dagster"),
        **{k: v for k, v in dagster_pg_env(
            f"postgresql://dagster:dagster-pw@{host}:{port}/dagster").items()},
        "EVAL_RESULTS_URL": f"postgresql+psycopg://eval:eval-pw@{host}:{port}/evals",
        "EVAL_PROJECT": str(project),
        "EVAL_HOME": str(tmp_path / "var" / "eval"),
        "APP": str(ROOT),
        "EVAL_NIGHTLY_CRON": "0 0 1 1 *",  # the schedule itself does not tick meanwhile
        "EVAL_SENSOR_INTERVAL_S": "5",
    }  # fmt: skip


def shell(command: str, cwd: Path, env: dict[str, str], ok: bool = True) -> str:
    ran = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=600)  # fmt: skip
    if ok:
        assert ran.returncode == 0, f"{command}\n{ran.stdout}\n{ran.stderr}"
    return ran.stdout if ran.returncode == 0 else ""


def on_port(command: str, port: int) -> str:
    """The page's command with this test's webserver port for 3000."""
    return command.replace("-p 3000", f"-p {port}").replace(":3000", f":{port}")


def wait_for(what: str, check, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {seconds} s"
        time.sleep(2)


def stop(process: subprocess.Popen) -> None:
    """As systemd stops a unit: SIGTERM, then SIGKILL after a while."""
    process.terminate()
    try:
        process.wait(120)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


def drop_roles(env: dict[str, str], cwd: Path) -> None:
    for sql in ("DROP DATABASE IF EXISTS dagster WITH (FORCE)",
                "DROP DATABASE IF EXISTS evals WITH (FORCE)",
                "DROP ROLE IF EXISTS dagster", "DROP ROLE IF EXISTS eval"):  # fmt: skip
        shell(f"psql -v ON_ERROR_STOP=1 -c {shlex.quote(sql)}", cwd, env)


@pytest.mark.postgres
def test_the_runbook_runs_as_printed(pg_server, tmp_path, monkeypatch):
    env = the_environment_file(tmp_path, pg_server, one_suite_project(tmp_path))
    anywhere = tmp_path / "elsewhere"  # not the repository: the commands work from anywhere
    anywhere.mkdir()
    port = free_port()
    drop_roles(env, anywhere)
    with ExitStack() as stack:
        stack.callback(drop_roles, env, anywhere)
        for command in block("### Databases and roles"):
            shell(command, anywhere, env)
        for command in block("### The instance file"):
            shell(command, anywhere, env)

        processes = []
        for name, command in zip(("daemon", "webserver"), block("### The processes"),
                                 strict=True):  # fmt: skip
            log = stack.enter_context(open(tmp_path / f"{name}.log", "w"))
            process = subprocess.Popen(["bash", "-c", f"exec {on_port(command, port)}"],
                                       cwd=anywhere, env=env, stdout=log,
                                       stderr=subprocess.STDOUT)  # fmt: skip
            processes.append(process)
            stack.callback(stop, process)

        def live() -> bool:
            assert all(p.poll() is None for p in processes), "the daemon or the webserver died"
            return all(shell(on_port(c, port), anywhere, env, ok=False)
                       for c in block("### Liveness"))  # fmt: skip

        wait_for("the liveness checks pass", live)

        for key in ("DAGSTER_HOME", *dagster_pg_env("postgresql://x@h:1/d")):
            monkeypatch.setenv(key, env[key])
        instance = stack.enter_context(DagsterInstance.get())
        wait_for("the sensor's first tick", lambda: len(instance.get_runs()) >= 2)

        (nightly,) = block("### Run the nightly now")
        printed = shell(on_port(nightly, port), anywhere, env)
        assert "drive_thru/v1: queued, run " in printed and "1 run(s) queued" in printed, printed

        def all_done() -> bool:
            assert all(p.poll() is None for p in processes), "the daemon or the webserver died"
            runs = instance.get_runs()
            return len(runs) == 3 and all(r.status in DONE for r in runs)

        wait_for("the runs finish", all_done, seconds=900)
        runs = instance.get_runs()
        by_sensor = [r for r in runs if r.tags.get("dagster/sensor_name")]
        assert sorted(r.tags["eval/label"] for r in by_sensor) == ["production", "staging"]
        (now,) = [r for r in runs if r.tags.get("eval/launched_by") == "eval-pipeline nightly"]
        assert now.status == DagsterRunStatus.SUCCESS
        assert now.tags["dagster/partition"] == "drive_thru/v1"
        assert now.tags["eval/tier"] == "full"

        for process in processes:  # the upgrade: the units are stopped first
            stop(process)
        upgrade = block("### Upgrades and migrations")
        assert upgrade[0] == "dagster instance migrate"
        outputs = [shell(command, anywhere, env) for command in upgrade]
        assert "drive_thru" in outputs[-1] and "PASS" in outputs[-1], outputs[-1]

    (shared,) = block("## Step data on several machines")
    shell(shared, anywhere, env)
    instance_file = yaml.safe_load((Path(env["DAGSTER_HOME"]) / "dagster.yaml").read_text())
    assert instance_file["compute_logs"]["class"] == "S3ComputeLogManager"
    assert instance_file["storage"] == yaml.safe_load(
        (ROOT / "deploy" / "dagster.yaml").read_text())["storage"]  # fmt: skip


def unit_command(name: str) -> str:
    text = (UNITS / name).read_text()
    (line,) = re.findall(r"^ExecStart=(.*)$", text, re.M)
    assert "EnvironmentFile=/etc/eval-pipeline/env" in text and "Restart=always" in text
    return line


def test_the_systemd_units_run_the_pages_commands():
    """The units `systemctl enable --now` starts run the page's processes, $APP spelled
    out as the install folder and the binaries from its environment."""
    daemon, webserver = block("### The processes")
    expected = [
        f"{INSTALLED}/.venv/bin/" + c.replace('"$APP', INSTALLED).replace('.yaml"', ".yaml")
        for c in (daemon, webserver)
    ]
    assert [unit_command("eval-dagster-daemon.service"),
            unit_command("eval-dagster-webserver.service")] == expected  # fmt: skip
    copy, reload, enable = block("### Supervision")
    installed = shlex.split(copy)[2:-1]
    assert [Path(p).name for p in installed] == sorted(p.name for p in UNITS.iterdir())
    assert all((ROOT / p).is_file() for p in installed)
    assert reload == "sudo systemctl daemon-reload"
    assert shlex.split(enable)[-2:] == ["eval-dagster-daemon", "eval-dagster-webserver"]
