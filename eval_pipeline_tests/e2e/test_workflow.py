""".github/workflows/eval.yml, run as GitHub would run a pull request's job: its steps'
scripts in order (bash -eo pipefail, GITHUB_ENV carried from step to step), in a git
repository holding a copy of this project, on a fresh results store. An unchanged suite
passes; a pull request that points production at the worse prompt fails the gate."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from eval_pipeline_tests import forkserver
from eval_pipeline_tests.helpers import CONFIG_ENV, ROOT, SUITE_NAMES, copy_project

WORKFLOW = ROOT / ".github" / "workflows" / "eval.yml"


def condition_holds(expression: str | None, event: str) -> bool:
    """The `if:` expressions the workflow uses; any other fails the test (teach it here)."""
    pull_request = event == "pull_request"
    known = {None: True, "always()": True, "github.event_name == 'pull_request'": pull_request,
             "always() && github.event_name == 'pull_request'": pull_request}  # fmt: skip
    assert expression in known, f"unexpected expression in the workflow: {expression}"
    return known[expression]


def run_job(job: dict, workspace: Path, event: str, extra_env: dict[str, str]) -> list:
    """Every step with a `run:` (except the install: this environment has the package),
    in order; returns (name, exit code, output) per step run."""
    github_env = workspace / ".github_env"
    github_env.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    env |= yaml.safe_load(WORKFLOW.read_text()).get("env") or {}  # the workflow's own
    env |= {"GITHUB_WORKSPACE": str(workspace), "GITHUB_ENV": str(github_env),
            "GITHUB_STEP_SUMMARY": str(workspace / ".summary"),
            "GITHUB_OUTPUT": str(workspace / ".output"), "RUNNER_TEMP": str(workspace.parent),
            "EVENT": event, "EVAL_HOME": str(workspace / ".eval_ci"), **extra_env}  # fmt: skip
    results = []
    for step in job["steps"]:
        if "run" not in step or step.get("name") == "Install":
            continue
        env |= dict(line.split("=", 1) for line in github_env.read_text().splitlines() if line)
        if not condition_holds(step.get("if"), event):
            continue
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               step["run"]], cwd=workspace, env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip
        results.append((step.get("name"), done.returncode, done.stdout + done.stderr))
        if done.returncode != 0 and step.get("if") != "always()":
            break
    return results


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


@pytest.fixture
def repository(tmp_path) -> Path:
    """A git repository laid out as this one (the examples' project under examples/) with
    the workflow, one commit (the base); `.venv` is this environment's."""
    workspace = tmp_path / "checkout"
    workspace.mkdir()
    shutil.move(copy_project(tmp_path).parent, workspace / "examples")
    shutil.copytree(ROOT / ".github", workspace / ".github")
    forkserver.venv_view(workspace / ".venv")  # (a symlink, its CLI served when on)
    (workspace / ".gitignore").write_text(".venv\n.eval_ci\nout/\n.github_env\n.summary\n")
    git("init", "-q", cwd=workspace)
    git("add", "-A", cwd=workspace)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=workspace)
    return workspace


def jobs() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]


def test_the_matrix_lists_every_suite(repository):
    (step,) = run_job(jobs()["suites"], repository, "pull_request", {})
    assert step[1] == 0, step[2]
    line = (repository / ".output").read_text().strip()
    assert json.loads(line.removeprefix("names=")) == list(SUITE_NAMES)


def test_an_unchanged_pull_request_passes(repository):
    base = git("rev-parse", "HEAD", cwd=repository)
    steps = run_job(jobs()["gate"], repository, "pull_request",
                    {"SUITE": "drive_thru", "BASE_SHA": base})  # fmt: skip
    names = [name for name, _, _ in steps]
    assert names[:2] == ["Baseline - the base commit's agent and prompts on this branch's cases",
                         "Gate"]  # fmt: skip
    baseline, gate = steps[0], steps[1]
    assert baseline[1] == 0, baseline[2]
    assert gate[1] == 0, gate[2]
    assert gate[2].strip().splitlines()[-1] == "VERDICT: PASS (exit 0)"
    body = json.loads((repository / "out" / "drive_thru.json").read_text())
    assert body["gate"]["baseline_run_id"] == json.loads(
        (repository / "out" / "drive_thru-base.json").read_text())["run"]["run_id"]  # fmt: skip
    assert "Regression gate" in (repository / ".summary").read_text()


def point_production_at_the_worse_prompt(repository: Path) -> str:
    """The pull request's commit: production labels v2, the worse prompt; the base's sha."""
    base = git("rev-parse", "HEAD", cwd=repository)
    labels = repository / "examples" / "prompts" / "labels.yaml"
    data = yaml.safe_load(labels.read_text())
    data["drive-thru/orchestrator"]["production"] = 2  # the worse prompt
    labels.write_text(yaml.safe_dump(data))
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "worse", cwd=repository)
    return base


def test_a_pull_request_that_makes_production_worse_fails_the_gate(repository):
    base = point_production_at_the_worse_prompt(repository)
    steps = run_job(jobs()["gate"], repository, "pull_request",
                    {"SUITE": "drive_thru", "BASE_SHA": base})  # fmt: skip
    baseline, gate = steps[0], steps[1]
    assert baseline[1] == 0, baseline[2]
    assert gate[1] == 1, gate[2]
    assert gate[2].strip().splitlines()[-1].startswith("VERDICT: FAIL — ")
    verdict = gate[2].strip().splitlines()[-1]
    assert "paired_gate" in verdict or "min_mean_scores" in verdict


class GitHubStub:
    """GitHub's issue-comments API as the comment job uses it: list, create, update; what
    it was asked is kept."""

    def __init__(self):
        self.comments: list[dict] = []
        self.requests: list[tuple[str, str, dict | None]] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # (quiet)
                pass

            def _answer(self, code: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict | None:
                size = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(size)) if size else None

            def do_GET(self):
                stub.requests.append(("GET", self.path, None))
                if self.headers.get("Authorization") != "Bearer ghs-token":
                    return self._answer(401, {"message": "Bad credentials"})
                self._answer(200, stub.comments)

            def do_POST(self):
                body = self._body()
                stub.requests.append(("POST", self.path, body))
                made = {
                    "id": len(stub.comments) + 1,
                    "body": body["body"],
                    "html_url": f"https://github.test/c/{len(stub.comments) + 1}",
                }
                stub.comments.append(made)
                self._answer(201, made)

            def do_PATCH(self):
                body = self._body()
                stub.requests.append(("PATCH", self.path, body))
                which = int(self.path.rsplit("/", 1)[1])
                found = next(c for c in stub.comments if c["id"] == which)
                found["body"] = body["body"]
                self._answer(200, found)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def test_the_pull_request_gets_one_comment_with_each_suites_verdict(repository):
    """The gate's verdict on the pull request itself, as Langfuse's and Braintrust's
    actions post theirs: one comment, posted on the first push and updated (not added
    again) on the next, with the verdict line, Δ and interval and the job summaries' link."""
    base = point_production_at_the_worse_prompt(repository)
    gate = run_job(jobs()["gate"], repository, "pull_request",
                   {"SUITE": "drive_thru", "BASE_SHA": base})  # fmt: skip
    assert gate[1][1] == 1, gate[1][2]
    github = GitHubStub()
    env = {"GITHUB_API_URL": github.url, "GITHUB_TOKEN": "ghs-token", "PR_NUMBER": "7",
           "GITHUB_REPOSITORY": "team/agents", "GITHUB_RUN_ID": "42",
           "GITHUB_SERVER_URL": "https://github.test"}  # fmt: skip
    try:
        for _push in (1, 2):
            (step,) = run_job(jobs()["comment"], repository, "pull_request", env)
            assert step[1] == 0, step[2]
            assert "on pull request #7: https://github.test/c/1" in step[2], step[2]
    finally:
        github.server.shutdown()
    assert [(m, p.split("?")[0]) for m, p, _ in github.requests] == [
        ("GET", "/repos/team/agents/issues/7/comments"),
        ("POST", "/repos/team/agents/issues/7/comments"),
        ("GET", "/repos/team/agents/issues/7/comments"),
        ("PATCH", "/repos/team/agents/issues/comments/1"),
    ]  # fmt: skip
    (posted,) = github.comments
    said = json.loads((repository / "out" / "drive_thru.json").read_text())["conclusion"]
    row = next(line for line in posted["body"].splitlines() if line.startswith("| drive\\_thru"))
    assert "**FAIL** — " in row and f"{said['delta']:+.3f}" in row
    assert "[" in row and said["verdict"] == "FAIL"
    assert "https://github.test/team/agents/actions/runs/42" in posted["body"]
    assert "ghs-token" not in posted["body"]
