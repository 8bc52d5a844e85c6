"""Screenshots of the Dagster UI after the demo and one label move, for docs/dagster.md.

    python scripts/dagster_screenshots.py                 # into docs/images/
    python scripts/dagster_screenshots.py --keep /tmp/ui  # and keep the instance there

1. ``scenario``: copies the examples' project into a fresh folder and runs
   ``eval-pipeline demo`` there (per suite, production PASS and staging FAIL); then moves
   drive-thru's ``staging`` label to a new version (a copy of production) with
   ``eval-pipeline prompts add``, ticks the label sensor once and runs what it requests, as
   the daemon would, with a budget of ``BUDGET_CALLS`` model calls, which the gate cannot
   decide on (UNDECIDED). So every look is there: PASS, FAIL, UNDECIDED and not tested.
2. starts ``dagster-webserver`` on that instance, and
3. takes a headless Chromium screenshot of each view (``VIEWS``) into docs/images/.

The e2e test eval_pipeline_tests/e2e/test_dagster_looks.py runs the same scenario and
reads the same views through the webserver's GraphQL API.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eval_pipeline.settings import copy_examples_project

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")
PROMPT = "drive-thru/orchestrator"  # the label that moves (drive_thru, drive_thru_conversations)
BUDGET_CALLS = 12  # the moved version's runs: too few calls for the gate to decide
LOCATION = "eval_pipeline.definitions"
CONFIG_ENV = ("EVAL_LLM_BASE_URL", "EVAL_LLM_API_KEY", "OPENAI_API_KEY", "EVAL_RESULTS_URL",
              "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL",
              "EVAL_LLM_MODEL", "EVAL_PROMPTS_DIR")  # fmt: skip


def scenario(folder: Path) -> dict[str, str]:
    """The demo and one label move in ``folder`` (a copy of the examples' project, its own
    EVAL_HOME and DAGSTER_HOME); the environment that reads them."""
    project = copy_examples_project(folder / "project").parent
    home = folder / "home"
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    env |= {"EVAL_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
            "EVAL_PROJECT": str(project / "eval-pipeline.yaml")}  # fmt: skip
    cli = [str(BIN / "eval-pipeline")]
    subprocess.run([*cli, "demo"], cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
    source = project / "prompts" / PROMPT / "v1.yaml"  # production's, as a new version
    subprocess.run([*cli, "prompts", "add", PROMPT, str(source), "--label", "staging"],
                   cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    subprocess.run([sys.executable, __file__, "--sensor-runs"], cwd=project, env=env,
                   check=True)  # fmt: skip
    return env


def sensor_runs() -> None:
    """One tick of the label sensor, and its run requests run here as the daemon would
    (the runs of the code location; execute: defs/located.py), each with the budget."""
    from dagster import DagsterInstance, SensorResult, build_sensor_context

    from eval_pipeline.cli.demo import QUIET
    from eval_pipeline.defs import build_definitions
    from eval_pipeline.defs.located import located_jobs

    instance = DagsterInstance.get()
    defs = build_definitions()
    sensor = defs.resolve_sensor_def("prompt_label_sensor")
    with build_sensor_context(instance=instance, resources=defs.resources) as context:
        result = sensor(context)
    assert isinstance(result, SensorResult) and result.run_requests, result
    for request in result.dynamic_partitions_requests or ():
        instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
    with located_jobs(instance, Path.cwd()) as jobs:
        for request in result.run_requests:
            config = {**request.run_config, **QUIET}
            config["ops"]["agent_run_outputs"]["config"]["max_calls"] = BUDGET_CALLS
            jobs.run("eval_job", request.partition_key, config, request.tags)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def webserver(folder: Path, env: dict[str, str]) -> Iterator[str]:
    """dagster-webserver on the scenario's instance and project; its base URL."""
    project = Path(env["EVAL_PROJECT"]).parent
    workspace = folder / "workspace.yaml"
    workspace.write_text(f"load_from:\n  - python_module:\n      module_name: {LOCATION}\n"
                         f"      working_directory: {project}\n")  # fmt: skip
    port = free_port()
    log = (folder / "webserver.log").open("w")
    server = subprocess.Popen([str(BIN / "dagster-webserver"), "-w", str(workspace), "-h",
                               "127.0.0.1", "-p", str(port)], cwd=project, env=env,
                              stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                found = graphql(url, "{ workspaceOrError { ... on Workspace { locationEntries "
                                     "{ locationOrLoadError { __typename } } } } }")  # fmt: skip
                entries = found["workspaceOrError"]["locationEntries"]
                if entries and entries[0]["locationOrLoadError"]:
                    graphql(url, "mutation { setNuxSeen }")  # (no "Join the community")
                    break
            except OSError:
                pass
            assert server.poll() is None, (folder / "webserver.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the webserver did not start in 180 s"
            time.sleep(1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def graphql(url: str, query: str, variables: dict | None = None) -> dict:
    """An answer of the webserver's GraphQL API (what the UI reads)."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{url}/graphql", data=body,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.load(response)
    if answer.get("errors"):
        raise RuntimeError(answer["errors"])
    return answer["data"]


def views(url: str) -> dict[str, str]:
    """Each view's file name and path in the UI; the runs by verdict from the run tags."""
    runs = graphql(url, '{ runsOrError(filter: {tags: [{key: "eval/verdict", value: "UNDECIDED"}]})'
                        " { ... on Runs { results { runId } } } }")  # fmt: skip
    undecided = runs["runsOrError"]["results"][0]["runId"]
    failed = graphql(url, '{ runsOrError(filter: {tags: [{key: "eval/verdict", value: "FAIL"}]})'
                          " { ... on Runs { results { runId } } } }")  # fmt: skip
    fail = failed["runsOrError"]["results"][0]["runId"]
    return {
        "dagster-asset-graph": f"/locations/{LOCATION}/asset-groups/evaluation",
        "dagster-eval-summary": "/assets/eval_summary",
        "dagster-checks": "/assets/eval_summary?view=checks",
        "dagster-check-partitions": "/assets/eval_summary?view=checks&checkDetail=paired_gate",
        "dagster-partitions": "/assets/eval_summary?view=partitions",
        "dagster-partition-pass": "/assets/eval_summary?view=partitions&partition=drive_thru%2Fv1",
        "dagster-partition-fail": "/assets/eval_summary?view=partitions&partition=drive_thru%2Fv2",
        "dagster-partition-undecided":
            "/assets/eval_summary?view=partitions&partition=drive_thru%2Fv3",
        "dagster-runs": "/runs",
        "dagster-runs-undecided": "/runs?q%5B0%5D=tag%3Aeval%2Fverdict%3DUNDECIDED",
        "dagster-run-undecided": f"/runs/{undecided}",
        "dagster-run-fail": f"/runs/{fail}",
    }


def emoji_font() -> bool:
    """Whether Chromium can draw the verdict marks (🟢 🔴 🟡): without a colour emoji font
    they are boxes in the screenshots (not in a desktop browser)."""
    found = subprocess.run(["fc-list"], capture_output=True, text=True, check=False).stdout
    return "emoji" in found.lower()


def screenshot(url: str, path: Path) -> None:
    subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--hide-scrollbars",
                    "--window-size=1800,1100", "--virtual-time-budget=20000",
                    f"--screenshot={path}", url],
                   check=True, capture_output=True, timeout=180)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--keep", type=Path, help="make the instance here and keep it")
    parser.add_argument("--sensor-runs", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sensor_runs:
        sensor_runs()
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="dagster-screenshots-"))
    env = scenario(folder) if not (folder / "home").exists() else _env(folder)
    args.out.mkdir(parents=True, exist_ok=True)
    if not emoji_font():
        print("no colour emoji font (e.g. Debian's fonts-noto-color-emoji): the verdict marks "
              "show as boxes", file=sys.stderr)  # fmt: skip
    with webserver(folder, env) as url:
        for name, path in views(url).items():
            screenshot(url + path, args.out / f"{name}.png")
            print(args.out / f"{name}.png")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)


def _env(folder: Path) -> dict[str, str]:
    """The environment of a scenario made before (--keep)."""
    home, project = folder / "home", folder / "project" / "eval-pipeline.yaml"
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    return env | {"EVAL_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
                  "EVAL_PROJECT": str(project)}  # fmt: skip


if __name__ == "__main__":
    main()
