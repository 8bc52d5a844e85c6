"""Screenshots of a real Langfuse server's views of an evaluation run, for docs/langfuse.md.

    python scripts/langfuse_screenshots.py --url http://127.0.0.1:3000 \\
        --login admin@example.com:password123          # into docs/images/langfuse-*.png

1. ``scenario``: copies the examples' project into a fresh folder, makes sure Langfuse
   holds drive-thru's prompt (v1 ``production``, v2 ``staging``, as ``prompts/`` says), and
   runs ``eval-pipeline run`` twice with Langfuse configured, as the real-server suite
   (eval_pipeline_tests/e2e/test_langfuse_real.py) does: a baseline run of production, then
   staging (worse on purpose) gated against it (FAIL or UNDECIDED).
2. logs in to the web UI as ``--login`` (email:password, a member of the keys' project)
   and takes a headless Chromium screenshot (1280×800, through the DevTools protocol, so
   the session cookie is sent) of each view (``views``) into docs/images/.

The server's keys come from ``--public-key``/``--secret-key`` (default: the local server's,
pk-lf-test / sk-lf-test, ../shared/langfuse-local). A ``dual`` server shows experiments
only to a user who turned the v4 preview on: use an ``events_only`` one (v4's default).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import yaml

from eval_pipeline.settings import copy_examples_project

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")
SUITE, PROMPT = "drive_thru", "drive-thru/orchestrator"
SIZE = (1280, 800)
MAX_BYTES = 250_000  # a larger PNG is reduced to 256 colours
CONFIG_ENV = ("EVAL_LLM_BASE_URL", "EVAL_LLM_API_KEY", "OPENAI_API_KEY", "EVAL_RESULTS_URL",
              "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL", "LANGFUSE_HOST",
              "EVAL_LLM_MODEL", "EVAL_PROMPTS_DIR", "EVAL_LANGFUSE_ENVIRONMENT")  # fmt: skip


def eventually(probe: Callable[[], Any], what: str, timeout_s: float = 180) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := probe():
            return found
        time.sleep(2)
    raise SystemExit(f"{what}: not there after {timeout_s:.0f} s")


def ensure_prompt(api: httpx.Client) -> None:
    """drive-thru's prompt in Langfuse as the examples' prompts/ holds it, if it is not."""
    if api.get(f"/api/public/v2/prompts/{quote(PROMPT, safe='')}").status_code == 200:
        return
    labels = yaml.safe_load((EXAMPLES / "prompts" / "labels.yaml").read_text())[PROMPT]
    for version in sorted(set(labels.values())):
        source = yaml.safe_load((EXAMPLES / "prompts" / PROMPT / f"v{version}.yaml").read_text())
        made = api.post("/api/public/v2/prompts", json={
            "name": PROMPT, "type": source["type"], "prompt": source["prompt"],
            "config": source.get("config") or {},
            "labels": [label for label, v in labels.items() if v == version]})  # fmt: skip
        made.raise_for_status()


def scenario(folder: Path, url: str, keys: tuple[str, str]) -> dict[str, dict[str, Any]]:
    """The baseline run and the gated candidate in a copy of the examples' project; each
    run's JSON result (``eval-pipeline run --json``)."""
    project = copy_examples_project(folder / "project").parent
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    env |= {"EVAL_HOME": str(folder / "home"), "LANGFUSE_BASE_URL": url,
            "LANGFUSE_PUBLIC_KEY": keys[0], "LANGFUSE_SECRET_KEY": keys[1]}  # fmt: skip
    runs: dict[str, dict[str, Any]] = {}
    for name, extra in (("baseline", ()), ("candidate", ("--label", "staging"))):
        if name == "candidate":
            extra = (*extra, "--baseline-run", runs["baseline"]["run"]["run_id"])
        out = folder / f"{name}.json"
        done = subprocess.run([str(BIN / "eval-pipeline"), "run", "--suite", SUITE, "--tier",
                               "smoke", "--json", str(out), *extra],
                              cwd=project, env=env, capture_output=True, text=True)  # fmt: skip
        if done.returncode == 2 or not out.exists():
            raise SystemExit(f"eval-pipeline run ({name}): {done.stdout}\n{done.stderr}")
        runs[name] = json.loads(out.read_text())
        print(f"{name}: {runs[name]['run']['run_id']} {runs[name]['verdict']}")
    return runs


def ui_cookies(url: str, login: str) -> dict[str, str]:
    """The web UI's session cookies for ``email:password``."""
    email, _, password = login.partition(":")
    with httpx.Client(base_url=url, timeout=60) as ui:
        csrf = ui.get("/api/auth/csrf").json()["csrfToken"]
        ui.post("/api/auth/callback/credentials", data={
            "csrfToken": csrf, "email": email, "password": password, "json": "true"})  # fmt: skip
        if not ui.get("/api/auth/session").json().get("user"):
            raise SystemExit(f"the UI refused the login {email}")
        return dict(ui.cookies)


@dataclass
class View:
    path: str
    expect: str  # a text the view shows once loaded
    setup: str = ""  # JavaScript run before the view is (re)loaded: its local settings
    then: str = ""  # JavaScript run once it is loaded (a click)


SHOW_VERDICT = """(() => {{  // Columns: the name, the item count and the verdict's scores
  const key = 'experimentsColumnVisibility-{project}';
  const shown = JSON.parse(localStorage.getItem(key) || '{{}}');
  for (const k of Object.keys(shown))
    shown[k] = k.startsWith('Experiment-verdict') || k.startsWith('Experiment-avg_');
  shown.datasetId = false;
  localStorage.setItem(key, JSON.stringify(shown));
}})()"""
NARROW = "localStorage.setItem('sidebar:state', 'false')"
HIDE_FILTERS = "document.querySelector('button[aria-label=\"Hide filters\"]')?.click()"
CLICK = """[...document.querySelectorAll('button')].find(b => b.textContent.trim()
  .startsWith({text!r}))?.click()"""


def views(api: httpx.Client, runs: dict[str, dict[str, Any]], since: str) -> dict[str, View]:
    """Each screenshot's name and view."""
    project = api.get("/api/public/projects").json()["data"][0]["id"]

    def experiment(run_id: str) -> dict[str, Any] | None:
        answer = api.get("/api/public/experiments", params={
            "name": run_id, "fields": "core,scores", "fromStartTime": since})  # fmt: skip
        answer.raise_for_status()
        found = answer.json()["data"]
        return found[0] if found and len(found[0].get("scores") or []) >= 3 else None

    base, cand = (eventually(lambda r=r: experiment(r["run"]["run_id"]),
                             f"the experiment of {r['run']['run_id']}, with its scores")
                  for r in (runs["baseline"], runs["candidate"]))  # fmt: skip
    items = api.get("/api/public/experiment-items", params={
        "experimentName": cand["name"], "fields": "core", "limit": 1,
        "fromStartTime": since}).json()["data"]  # fmt: skip
    home = f"/project/{project}"
    narrow_table = f"{CLICK.format(text='Charts')}; {HIDE_FILTERS}"
    return {
        "langfuse-experiments": View(
            f"{home}/experiments", runs["candidate"]["verdict"],
            f"{NARROW}; {SHOW_VERDICT.format(project=project)}", narrow_table),
        "langfuse-compare": View(
            f"{home}/experiments/results?baseline={base['id']}&c={cand['id']}", "Baseline",
            NARROW, HIDE_FILTERS),
        "langfuse-trace": View(f"{home}/traces/{items[0]['traceId']}", "sdk-experiment", NARROW),
        "langfuse-home": View(home, "Total traces", NARROW, CLICK.format(text="Env")),
    }  # fmt: skip


HOME_DASHBOARD = "langfuse-home-dashboard"  # Langfuse's own Home (LANGFUSE_HOME_DASHBOARD_ID)


@contextmanager
def home_without(url: str, cookies: dict[str, str], project: str,
                 environment: str) -> Iterator[None]:  # fmt: skip
    """docs/langfuse.md's recipe for the project's Home (what a member does in the UI, here
    through the UI's own API): Langfuse Home cloned as the project's Home dashboard, with
    the saved filter ``environment none of <environment>``. The project's Home is put back
    after."""
    with httpx.Client(base_url=url, cookies=cookies, timeout=60) as ui:

        def trpc(procedure: str, payload: dict[str, Any], query: bool = False) -> Any:
            body = {"0": {"json": payload}}
            if query:
                params = {"batch": "1", "input": json.dumps(body)}
                answer = ui.get(f"/api/trpc/{procedure}", params=params)
            else:
                answer = ui.post(f"/api/trpc/{procedure}", params={"batch": "1"}, json=body)
            return answer.json()[0]["result"]["data"]["json"]

        before = trpc("dashboard.getHomeDashboard", {"projectId": project}, query=True)
        clone = trpc("dashboard.cloneDashboard", {
            "projectId": project, "dashboardId": HOME_DASHBOARD, "setAsHome": True})  # fmt: skip
        try:
            trpc("dashboard.updateDashboardFilters", {
                "projectId": project, "dashboardId": clone["id"],
                "filters": [{"type": "stringOptions", "column": "environment",
                             "operator": "none of", "value": [environment]}]})  # fmt: skip
            yield
        finally:
            trpc("dashboard.setHomeDashboard", {
                "projectId": project, "dashboardId": before["homeDashboardId"]})  # fmt: skip
            trpc("dashboard.delete", {"projectId": project, "dashboardId": clone["id"]})


@contextmanager
def chromium(folder: Path) -> Iterator[Page]:
    """A headless Chromium and one page of it, driven through the DevTools protocol."""
    profile = folder / "chromium"
    browser = subprocess.Popen([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
                                "--disable-background-networking", "--hide-scrollbars",
                                f"--window-size={SIZE[0]},{SIZE[1]}", "--remote-debugging-port=0",
                                f"--user-data-dir={profile}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        port_file = profile / "DevToolsActivePort"
        eventually(port_file.exists, "Chromium's DevTools port", 60)
        port = port_file.read_text().split()[0]
        targets = httpx.get(f"http://127.0.0.1:{port}/json/list").json()
        socket_url = next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"]
        from websockets.sync.client import connect

        with connect(socket_url, max_size=None) as socket:
            yield Page(socket)
    finally:
        browser.terminate()
        browser.wait(timeout=30)


class Page:
    """A browser page, driven through the DevTools protocol over ``socket``."""

    def __init__(self, socket: Any):
        self.socket, self.next_id = socket, 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            answer = json.loads(self.socket.recv())
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def text(self) -> str:
        found = self.call("Runtime.evaluate", expression="document.body.innerText")
        return str(found.get("result", {}).get("value", ""))

    def evaluate(self, script: str) -> None:
        self.call("Runtime.evaluate", expression=script)

    def open(self, url: str, expect: str) -> None:
        self.call("Page.navigate", url=url)
        eventually(lambda: expect in self.text() and "Loading" not in self.text(),
                   f"{url} showing {expect!r}", 120)  # fmt: skip
        time.sleep(3)  # (charts and score columns load after the table)

    def show(self, url: str, view: View, path: Path) -> None:
        """The view, with its settings, its click, and its screenshot into ``path``."""
        if view.setup:
            self.open(url + view.path, view.expect)
            self.evaluate(view.setup)
        self.open(url + view.path, view.expect)
        if view.then:
            self.evaluate(view.then)
            time.sleep(2)
        self.screenshot(path)
        print(path)

    def screenshot(self, path: Path) -> None:
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        if len(data) > MAX_BYTES:
            from PIL import Image

            out = io.BytesIO()
            Image.open(io.BytesIO(data)).quantize(256).save(out, "PNG", optimize=True)
            data = out.getvalue()
        path.write_bytes(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("LANGFUSE_BASE_URL",
                                                        "http://127.0.0.1:3000"))  # fmt: skip
    parser.add_argument("--public-key", default="pk-lf-test")
    parser.add_argument("--secret-key", default="sk-lf-test")
    parser.add_argument("--login", required=True, help="email:password of a UI user")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    url = args.url.rstrip("/")
    folder = Path(tempfile.mkdtemp(prefix="langfuse-screenshots-"))
    api = httpx.Client(base_url=url, auth=(args.public_key, args.secret_key), timeout=60)
    try:
        ensure_prompt(api)
        since = (datetime.now(UTC) - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
        runs = scenario(folder, url, (args.public_key, args.secret_key))
        shown = views(api, runs, since)
        cookies = ui_cookies(url, args.login)
        args.out.mkdir(parents=True, exist_ok=True)
        with chromium(folder) as page:
            page.call("Emulation.setDeviceMetricsOverride", width=SIZE[0], height=SIZE[1],
                      deviceScaleFactor=1, mobile=False)  # fmt: skip
            for name, value in cookies.items():
                page.call("Network.setCookie", name=name, value=value, url=url)
            for name, view in shown.items():
                page.show(url, view, args.out / f"{name}.png")
            project = shown["langfuse-home"].path.rsplit("/", 1)[1]
            with home_without(url, cookies, project, "sdk-experiment"):
                page.show(url, View(shown["langfuse-home"].path, "Total traces", NARROW),
                          args.out / "langfuse-home-without-evaluations.png")  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
