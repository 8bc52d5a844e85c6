"""The Langfuse paths black-box against a REAL Langfuse server (opt-in).

Set ``EVAL_TEST_LANGFUSE_URL`` (e.g. http://127.0.0.1:3000) to run; the keys come from
``EVAL_TEST_LANGFUSE_PUBLIC_KEY`` / ``EVAL_TEST_LANGFUSE_SECRET_KEY`` (default
pk-lf-test / sk-lf-test, the keys of the local server in docs). What the web UI would show
is read through its own tRPC API when ``EVAL_TEST_LANGFUSE_UI_LOGIN=email:password`` names
a user of the keys' project; those tests skip otherwise.

Everything goes through the CLI (``eval-pipeline``) run from a copy of ``examples/``, with
names made unique per session (suite, dataset, prompt, trace name), so a shared server is
fine and nothing of the checkout is written. The CLI talks to Langfuse through a logging
proxy, so every refused request is seen.

Assertions say what should hold; what Langfuse itself or a part we have not built yet
keeps from holding is ``xfail`` with the reason (strict: a fix turns it into a failure to
notice). Both v4 write modes are covered: ``events_only`` (the default) and ``dual`` (a
server mid-migration from v3, its users' v4 preview off), told apart by
``GET /api/public/traces`` (404 in events_only). Before the fixes of stop 40 (scores'
environment and observation, the description on every span, the answer first, the CLI's
Langfuse line): events_only 8 passed, 10 failed; dual 7 passed, 12 failed. Results now
(2026-11-28, 4.16.0): events_only 21 passed, 2 skipped, 3 xfailed; dual 24 passed, 2
xfailed (docs/langfuse.md, "Verified against a real server"). Runs in ~100 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import yaml

import eval_pipeline

URL = os.environ.get("EVAL_TEST_LANGFUSE_URL", "").rstrip("/")
PUBLIC_KEY = os.environ.get("EVAL_TEST_LANGFUSE_PUBLIC_KEY", "pk-lf-test")
SECRET_KEY = os.environ.get("EVAL_TEST_LANGFUSE_SECRET_KEY", "sk-lf-test")
UI_LOGIN = os.environ.get("EVAL_TEST_LANGFUSE_UI_LOGIN", "")

pytestmark = pytest.mark.skipif(
    not URL,
    reason="needs a real Langfuse server: set EVAL_TEST_LANGFUSE_URL=http://host:port (and "
    "EVAL_TEST_LANGFUSE_PUBLIC_KEY/_SECRET_KEY; EVAL_TEST_LANGFUSE_UI_LOGIN=email:password "
    "for the UI checks)",
)

EXAMPLES = Path(eval_pipeline.__file__).resolve().parents[1] / "examples"
PROMPT = "drive-thru/orchestrator"  # the examples' prompt of drive_thru
ENVIRONMENT = "sdk-experiment"  # where eval-pipeline's spans go (langfuse_client.py)
IO_TRUNCATE_LENGTH = 1000  # what the experiment items table shows of an output
WAIT_S = 120  # Langfuse ingests asynchronously


# --- helpers ------------------------------------------------------------------------------
def eventually(probe: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
    """probe() until it returns something truthy (ingestion is asynchronous)."""
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except (AssertionError, httpx.HTTPError, KeyError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(2)
    raise AssertionError(f"{what}: not there after {timeout_s:.0f} s (last: {last!r})"[:2000])


@dataclass
class Seen:
    method: str
    path: str
    status: int
    body: str


class LoggingProxy:
    """A reverse proxy in front of the server: every request and its status is kept."""

    def __init__(self, upstream: str):
        import uvicorn
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response
        from starlette.routing import Route

        self.upstream, self.seen = upstream, []
        client = httpx.AsyncClient(base_url=upstream, timeout=120)

        async def forward(request: Request) -> Response:
            body = await request.body()
            headers = {
                k: v
                for k, v in request.headers.items()
                if k.lower() not in ("host", "content-length", "connection")
            }
            path = request.scope["raw_path"].decode("latin-1")  # %2F stays encoded
            query = request.scope.get("query_string", b"").decode("latin-1")
            answer = await client.request(
                request.method, path + (f"?{query}" if query else ""), content=body, headers=headers
            )
            self.seen.append(
                Seen(
                    request.method,
                    path,
                    answer.status_code,
                    answer.text[:300] if answer.status_code >= 400 else "",
                )
            )
            drop = ("content-encoding", "content-length", "transfer-encoding", "connection")
            return Response(
                answer.content,
                answer.status_code,
                {k: v for k, v in answer.headers.items() if k.lower() not in drop},
            )

        app = Starlette(
            routes=[
                Route("/{path:path}", forward, methods=["GET", "POST", "PATCH", "PUT", "DELETE"])
            ]
        )
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoggingProxy:
        self.thread.start()
        eventually(lambda: self.server.started, "the logging proxy", 10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@dataclass
class Server:
    """The server under test: its public API (direct, not through the proxy) and mode."""

    http: httpx.Client
    mode: str  # "events_only" or "dual" (or "legacy")
    proxy: LoggingProxy
    since: str  # ISO time before this session wrote anything
    ui: httpx.Client | None = None

    def get(self, path: str, **params: Any) -> Any:
        response = self.http.get(f"/api/public{path}", params=params)
        response.raise_for_status()
        return response.json()

    def trpc(self, procedure: str, payload: dict[str, Any]) -> tuple[int, Any]:
        """A tRPC query as the UI sends it: (status, data or the error message)."""
        if self.ui is None:
            pytest.skip("set EVAL_TEST_LANGFUSE_UI_LOGIN=email:password to read what the UI shows")
        answer = self.ui.get(
            f"/api/trpc/{procedure}",
            params={"batch": "1", "input": json.dumps({"0": {"json": payload}})},
        )
        item = answer.json()[0]
        if "error" in item:
            return answer.status_code, item["error"]["json"]["message"]
        return answer.status_code, item["result"]["data"]["json"]

    def trpc_mutation(self, procedure: str, payload: dict[str, Any]) -> Any:
        """A tRPC mutation as the UI sends it: its data (an error fails the test)."""
        if self.ui is None:
            pytest.skip("set EVAL_TEST_LANGFUSE_UI_LOGIN=email:password to act as the UI does")
        answer = self.ui.post(f"/api/trpc/{procedure}", params={"batch": "1"},
                              json={"0": {"json": payload}})  # fmt: skip
        item = answer.json()[0]
        assert "error" not in item, (procedure, item["error"]["json"]["message"])
        return item["result"]["data"]["json"]

    def project_id(self) -> str:
        return self.get("/projects")["data"][0]["id"]

    def dataset(self, name: str) -> dict[str, Any]:
        return self.get(f"/v2/datasets/{quote(name, safe='')}")

    def experiment(self, run_id: str) -> dict[str, Any] | None:
        found = self.get(
            "/experiments", fromStartTime=self.since, name=run_id, fields="core,metadata,scores"
        )["data"]
        return found[0] if found else None

    def experiment_items(self, run_id: str) -> list[dict[str, Any]]:
        return self.get(
            "/experiment-items",
            fromStartTime=self.since,
            experimentName=run_id,
            fields="core,dataset,io,scores",
            limit=100,
        )["data"]

    def observations(
        self,
        conditions: list[dict[str, Any]],
        fields: str = "core,basic,trace_context,prompt,metadata",
    ) -> list[dict]:
        rows, cursor = [], None
        while True:
            page = self.get(
                "/v2/observations",
                fields=fields,
                limit=1000,
                filter=json.dumps(conditions),
                **({"cursor": cursor} if cursor else {}),
            )
            rows += page["data"]
            cursor = page["meta"].get("cursor")
            if not cursor:
                return rows


def ui_session(url: str, login: str) -> httpx.Client:
    email, _, password = login.partition(":")
    ui = httpx.Client(base_url=url, timeout=60)
    csrf = ui.get("/api/auth/csrf").json()["csrfToken"]
    ui.post(
        "/api/auth/callback/credentials",
        data={"csrfToken": csrf, "email": email, "password": password, "json": "true"},
    )
    assert ui.get("/api/auth/session").json().get("user"), f"UI login as {email} refused"
    return ui


# --- the session: a server, a project, and the CLI runs ------------------------------------
@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    http = httpx.Client(base_url=URL, auth=(PUBLIC_KEY, SECRET_KEY), timeout=60)
    health = http.get("/api/public/health").json()
    assert str(health.get("version", "")).startswith(("4.", "v4.")), health
    traces = http.get("/api/public/traces", params={"limit": 1})
    mode = "events_only" if traces.status_code == 404 else "dual"
    since = (datetime.now(UTC) - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    with LoggingProxy(URL) as proxy:
        yield Server(http, mode, proxy, since, ui_session(URL, UI_LOGIN) if UI_LOGIN else None)


@dataclass
class Project:
    root: Path
    env: dict[str, str]
    tag: str
    suite: str  # drive_thru, renamed
    lf_suite: str  # the same cases read from the synced Langfuse dataset
    prompt: str
    label: str  # a label only Langfuse knows (prompt v3)
    trace_name: str  # the suite's production trace name
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # name → result + stdout

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        script = Path(sys.executable).with_name("eval-pipeline")
        cmd = [str(script)] if script.exists() else [sys.executable, "-m", "eval_pipeline.cli"]
        done = subprocess.run(
            [*cmd, *args], cwd=self.root, env=self.env, capture_output=True, text=True, timeout=600
        )
        if check:
            assert done.returncode == 0, (
                f"{args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def run(self, key: str, suite: str, *extra: str, check: bool = True) -> dict[str, Any]:
        out = self.root / f"{key}.json"
        done = self.cli("run", "--suite", suite, "--tier", "smoke", "--json", str(out), *extra,
                        check=check)  # fmt: skip
        result = json.loads(out.read_text())
        assert done.returncode == result["exit_code"] != 2, done.stdout + done.stderr
        self.runs[key] = {
            "result": result,
            "run_id": result["run"]["run_id"],
            "stdout": done.stdout,
            "stderr": done.stderr,
            "items": len(result["items"]),
        }
        return self.runs[key]


TONE = '''
from langfuse import Evaluation

from eval_pipeline.evaluators.declare import evaluator


@evaluator(data_type="CATEGORICAL")
def tone(*, output, **_):
    """A categorical evaluator: typed CATEGORICAL scores and their config."""
    text = str(output.get("response", "")) if isinstance(output, dict) else str(output)
    return Evaluation(name="tone", value="friendly" if "?" in text else "neutral",
                      data_type="CATEGORICAL")
'''


@pytest.fixture(scope="module")
def project(server, tmp_path_factory) -> Project:
    """examples/ copied; drive_thru renamed (its prompt in Langfuse: v1 production, v2
    staging, v3 under a label of this session only), a categorical evaluator added, and a
    suite reading the same cases from the synced Langfuse dataset."""
    tag = uuid.uuid4().hex[:6]
    root = tmp_path_factory.mktemp("lfproject") / "project"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".eval_home", "__pycache__"))
    (root / "eval_examples" / "lfcheck_tone.py").write_text(TONE)
    suite, lf_suite, prompt = f"dt_{tag}", f"dtlf_{tag}", f"lfcheck-{tag}/orchestrator"
    doc = yaml.safe_load((root / "eval-pipeline.yaml").read_text())
    base = doc["suites"].pop("drive_thru")
    base |= {
        "prompt": prompt,
        "trace_name": f"prod-{tag}",
        "evaluators": [*base["evaluators"], "eval_examples.lfcheck_tone:tone"],
    }
    doc["suites"] = {
        suite: base,
        lf_suite: {
            **{k: v for k, v in base.items() if k != "case_validator"},
            "dataset": f"langfuse:eval-pipeline/{suite}",
            "thresholds": "datasets/drive_thru/thresholds.yaml",
        },
    }
    (root / "eval-pipeline.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    thresholds = root / "datasets" / "drive_thru" / "thresholds.yaml"
    th = yaml.safe_load(thresholds.read_text())
    th["categories"] = {"tone": {"order": ["rude", "neutral", "friendly"]}}
    thresholds.write_text(yaml.safe_dump(th, sort_keys=False))
    label = f"lfcheck-{tag}"
    for version, labels in ((1, ["production"]), (2, ["staging"]), (1, [label])):
        source = yaml.safe_load((EXAMPLES / "prompts" / PROMPT / f"v{version}.yaml").read_text())
        made = server.http.post(
            "/api/public/v2/prompts",
            json={
                "name": prompt,
                "type": source["type"],
                "prompt": source["prompt"],
                "config": source.get("config") or {},
                "labels": labels,
            },
        )
        assert made.status_code in (200, 201), made.text
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LANGFUSE_", "EVAL_LLM_", "EVAL_PROJECT", "PYTEST_"))
    }
    env |= {
        "LANGFUSE_PUBLIC_KEY": PUBLIC_KEY,
        "LANGFUSE_SECRET_KEY": SECRET_KEY,
        "LANGFUSE_BASE_URL": server.proxy.url,
        "EVAL_HOME": str(root.parent / "home"),
        "COLUMNS": "240",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return Project(root, env, tag, suite, lf_suite, prompt, label, f"prod-{tag}")


@pytest.fixture(scope="module")
def ran(project, server) -> Project:
    """The CLI runs every test reads: dataset sync (twice), a fresh run, the same again
    (every item from the memo), a run of the label only Langfuse knows, the
    Langfuse-sourced suite, and the staging version gated against the fresh run (worse on
    purpose: FAIL or UNDECIDED, exit 1 or 3)."""
    project.runs["sync1"] = {
        "stdout": project.cli("datasets", "sync", "--suite", project.suite).stdout
    }
    project.runs["sync2"] = {
        "stdout": project.cli("datasets", "sync", "--suite", project.suite).stdout
    }
    project.run("fresh", project.suite)
    project.run("memo", project.suite)
    project.run("label", project.suite, "--label", project.label)
    project.run("lf", project.lf_suite)
    fresh = project.runs["fresh"]["run_id"]
    project.run("gated", project.suite, "--label", "staging", "--baseline-run", fresh,
                check=False)  # fmt: skip
    for key in ("fresh", "memo", "label", "lf", "gated"):
        run = project.runs[key]
        eventually(
            lambda run=run: (
                (e := server.experiment(run["run_id"]))
                and e["itemCount"] == run["items"]
                and len(e.get("scores") or []) >= 3
            ),
            f"experiment {run['run_id']} with its items and run scores",
        )
    return project


def item_evaluators(project: Project) -> set[str]:
    return {"order_correctness", "tool_call_accuracy", "no_hallucinated_items", "tone"}


# --- prompts --------------------------------------------------------------------------------
def test_a_run_evaluates_the_version_a_langfuse_label_points_to(ran, server):
    label = ran.runs["label"]
    assert label["result"]["run"]["prompt_version"] == "v3"  # v3 exists only in Langfuse
    assert ran.runs["fresh"]["result"]["run"]["prompt_version"] == "v1"  # production
    generations = eventually(
        lambda: [
            o
            for o in server.observations(
                [
                    {
                        "type": "string",
                        "column": "sessionId",
                        "operator": "=",
                        "value": label["run_id"],
                    },
                    {"type": "string", "column": "type", "operator": "=", "value": "GENERATION"},
                ]
            )
            if o["type"] == "GENERATION"
        ],
        "the label run's generations",
    )
    assert {(o["promptName"], o["promptVersion"]) for o in generations} == {(ran.prompt, 3)}


def test_the_prompts_commands_read_the_langfuse_registry(ran):
    shown = ran.cli("prompts", "show", ran.prompt, "--label", ran.label, check=False)
    assert shown.returncode == 0 and "v3" in shown.stdout, shown.stdout + shown.stderr
    listed = ran.cli("prompts", "list", check=False)
    assert ran.prompt in listed.stdout


# --- tracing ---------------------------------------------------------------------------------
def test_each_item_is_one_trace_in_the_evaluation_environment(ran, server):
    fresh = ran.runs["fresh"]
    rows = eventually(
        lambda: server.observations(
            [{"type": "string", "column": "sessionId", "operator": "=", "value": fresh["run_id"]}]
        ),
        "the fresh run's observations",
    )
    roots = [o for o in rows if o["isRootObservation"]]
    assert len(roots) == fresh["items"] == len({o["traceId"] for o in rows})
    assert {o["environment"] for o in rows} == {ENVIRONMENT}
    assert {o["traceName"] for o in rows} == {f"eval-{ran.suite}"}
    assert {o["type"] for o in roots} == {"AGENT"}
    assert all({f"suite:{ran.suite}", "prompt:v1"} <= set(o["tags"]) for o in roots)
    generations = [o for o in rows if o["type"] == "GENERATION"]
    assert generations and {(o["promptName"], o["promptVersion"]) for o in generations} == {
        (ran.prompt, 1)
    }


# --- experiments -----------------------------------------------------------------------------
def test_each_run_is_an_experiment_of_its_dataset_with_description_and_metadata(ran, server):
    dataset = server.dataset(f"eval-pipeline/{ran.suite}")
    for key in ("fresh", "memo", "label"):
        run = ran.runs[key]
        exp = server.experiment(run["run_id"])
        assert exp["datasetId"] == dataset["id"]
        assert exp["metadata"]["suite"] == ran.suite
        assert exp["metadata"]["run_id"] == run["run_id"]
        assert exp["metadata"]["dataset_version"] == run["result"]["run"]["dataset_version"]
    described = {}
    for key in ("fresh", "memo", "label", "lf"):
        run_id, suite = ran.runs[key]["run_id"], ran.runs[key]["result"]["run"]["suite"]
        described[key] = server.experiment(run_id)["description"]
        assert described[key] in ("", f"eval-pipeline run {run_id} of {suite}")
    assert all(described.values()), described


def test_the_experiment_items_are_the_cases_with_the_agents_answer(ran, server):
    fresh = ran.runs["fresh"]
    items = server.experiment_items(fresh["run_id"])
    cases = {i["item_id"] for i in fresh["result"]["items"]}
    assert sorted(i["experimentItemId"] for i in items) == sorted(f"{ran.suite}:{c}" for c in cases)
    assert all(i["expectedOutput"] and i["input"] for i in items)
    cut = {}
    for item in items:
        answer = json.loads(item["output"])["response"]  # (the API answers it whole)
        shown = item["output"][:IO_TRUNCATE_LENGTH]  # what the table's Output column shows
        if json.dumps(answer) not in shown:  # (as encoded there: non-ASCII escaped)
            cut[item["experimentItemId"]] = shown[:40] + "…"
    assert not cut, f"{len(cut)}/{len(items)} outputs cut before the answer: {cut}"


def test_item_scores_are_typed_and_name_their_configs(ran, server):
    configs = {
        c["name"]: c for c in server.get("/score-configs", limit=100)["data"] if not c["isArchived"]
    }
    assert configs["no_hallucinated_items"]["dataType"] == "BOOLEAN"
    assert configs["order_correctness"]["dataType"] == "NUMERIC"
    assert {c["label"] for c in configs["tone"]["categories"]} == {"rude", "neutral", "friendly"}
    fresh = ran.runs["fresh"]
    trace_ids = {i["traceId"] for i in server.experiment_items(fresh["run_id"])}
    scores = eventually(
        lambda: server.get(
            "/v3/scores",
            fields="core,details,subject",
            limit=100,
            traceId=",".join(trace_ids),
            name="tone,no_hallucinated_items,order_correctness",
        )["data"],
        "the fresh run's item scores",
    )
    assert len(scores) == 3 * len(trace_ids)
    by_name = {s["name"]: s for s in scores}
    assert by_name["tone"]["dataType"] == "CATEGORICAL" and by_name["tone"]["value"] in (
        "rude",
        "neutral",
        "friendly",
    )
    assert by_name["no_hallucinated_items"]["dataType"] == "BOOLEAN"
    assert by_name["order_correctness"]["dataType"] == "NUMERIC"
    assert all(s["configId"] == configs[s["name"]]["id"] for s in scores)


def test_item_scores_are_in_their_items_environment(ran, server):
    items = server.experiment_items(ran.runs["fresh"]["run_id"])
    assert {i["environment"] for i in items} == {ENVIRONMENT}
    scores = [s for i in items for s in i.get("scores") or []]
    assert {s["name"] for s in scores} >= item_evaluators(ran)
    assert {s["environment"] for s in scores} == {ENVIRONMENT}


def test_item_scores_fill_the_experiment_views_default_columns(ran, server):
    items = server.experiment_items(ran.runs["fresh"]["run_id"])
    for item in items:
        kinds = {(s["subject"]["kind"], s["subject"]["id"]) for s in item.get("scores") or []}
        assert kinds == {("observation", item["id"])}, item["experimentItemId"]


def test_the_experiments_table_shows_the_item_scores_by_default(ran, server):
    fresh = ran.runs["fresh"]
    exp = server.experiment(fresh["run_id"])
    status, metrics = server.trpc(
        "experiments.metrics",
        {"projectId": server.project_id(), "experimentIds": [exp["id"]], "filter": None},
    )
    assert status == 200, metrics
    (row,) = metrics
    # the default-visible group is the observation-level one: ours are on the item's root
    assert {k.split("-")[0] for k in row["observationItemScores"]} >= item_evaluators(ran)


def test_run_level_scores_are_the_experiments_own(ran, server):
    for key in ("fresh", "lf"):
        exp = server.experiment(ran.runs[key]["run_id"])
        means = [s for s in exp["scores"] if s["name"].startswith("run_")]
        assert {s["name"] for s in means} >= {"run_order_correctness", "run_tool_call_accuracy"}
        assert {(s["subject"]["kind"], s["subject"]["id"]) for s in means} == {
            ("experiment", exp["id"])
        }
        assert {s["environment"] for s in means} == {ENVIRONMENT}


def experiment_scores(server: Server, run_id: str) -> dict[str, dict[str, Any]]:
    """The experiment's own scores (on its dataset run), by name, with their comment and
    metadata (GET /v3/scores, fields details)."""
    exp = server.experiment(run_id)
    scores = eventually(
        lambda: [s for s in server.get("/v3/scores", experimentId=exp["id"], limit=100,
                                       fields="core,details,subject")["data"]
                 if s["subject"]["kind"] == "experiment"],
        f"experiment {exp['id']}'s own scores",
    )  # fmt: skip
    assert {s["subject"]["id"] for s in scores} == {exp["id"]}
    return {s["name"]: s for s in scores}


def test_the_gates_verdict_is_the_experiments_own_score(ran, server):
    """The experiments list's Experiment score columns: ``verdict`` (CATEGORICAL), and for a
    gated run ``verdict_delta`` and ``verdict_margin``, the comment and metadata saying
    what decided it; in the traces' environment."""
    for key in ("fresh", "gated"):
        result = ran.runs[key]["result"]
        own = experiment_scores(server, ran.runs[key]["run_id"])
        verdict = own["verdict"]
        assert (verdict["dataType"], verdict["value"]) == ("CATEGORICAL", result["verdict"])
        assert verdict["metadata"]["verdict"] == result["verdict"]
        assert verdict["comment"].startswith(result["verdict"])
        assert {s["environment"] for s in own.values()} == {ENVIRONMENT}
    gated = ran.runs["gated"]["result"]
    conclusion = gated["conclusion"]
    assert gated["verdict"] in ("FAIL", "UNDECIDED") and conclusion["metric"]
    assert own["verdict_delta"]["value"] == pytest.approx(round(conclusion["delta"], 3))
    assert own["verdict_margin"]["value"] > 0
    assert verdict["metadata"]["verdict_metric"] == conclusion["metric"]
    assert verdict["metadata"]["baseline_run_id"] == ran.runs["fresh"]["run_id"]


def test_run_level_evaluators_are_the_experiments_own_scores(ran, server):
    for key in ("fresh", "gated"):
        result = ran.runs[key]["result"]
        own = experiment_scores(server, ran.runs[key]["run_id"])
        expected = result["summary"]["run_evaluations"]["avg_order_correctness"]["value"]
        assert own["avg_order_correctness"]["value"] == pytest.approx(expected)


def test_the_cli_link_compares_the_run_with_its_baselines_experiment(ran, server):
    gated, fresh = ran.runs["gated"], ran.runs["fresh"]
    baseline, candidate = (server.experiment(r["run_id"])["id"] for r in (fresh, gated))
    link = (f"{server.proxy.url}/project/{server.project_id()}/experiments/results"
            f"?baseline={baseline}&c={candidate}")  # fmt: skip
    said = " ".join((gated["stdout"] + gated["stderr"]).split())
    assert link in said and "experiment dataset run" not in said
    for experiment in (baseline, candidate):  # what the compare view loads
        status, found = server.trpc(
            "experiments.byId", {"projectId": server.project_id(), "experimentId": experiment}
        )
        assert status == 200, found


def test_a_dataset_run_says_the_verdict_in_its_metadata(ran, server):
    if server.mode == "events_only":
        pytest.skip("events_only: an experiment's metadata is its spans', written before the "
                    "verdict; the verdict is its score (test above)")  # fmt: skip
    name, gated = f"eval-pipeline/{ran.suite}", ran.runs["gated"]
    run = server.get(f"/datasets/{quote(name, safe='')}/runs/{gated['run_id']}")
    assert run["metadata"]["verdict"] == gated["result"]["verdict"]
    assert run["metadata"]["verdict_metric"] == gated["result"]["conclusion"]["metric"]


# --- environments ------------------------------------------------------------------------------
def test_an_sdk_environment_never_starts_with_langfuse(ran, server):
    """Public ingestion strips the reserved prefix (PublicEnvironmentName): no name we
    choose can be one of the ``langfuse-*`` environments the Home dashboard leaves out."""
    fresh = ran.runs["fresh"]
    trace_id = server.experiment_items(fresh["run_id"])[0]["traceId"]
    score = {"id": f"eval-pipeline-env-check-{ran.tag}", "traceId": trace_id,
             "name": "eval_pipeline_env_check", "value": 1, "dataType": "NUMERIC",
             "environment": f"langfuse-{ran.tag}-check"}  # fmt: skip
    sent = server.http.post("/api/public/ingestion", json={"batch": [{
        "id": score["id"], "type": "score-create", "body": score,
        "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z")}]})  # fmt: skip
    assert sent.status_code == 207 and not sent.json()["errors"], sent.text
    (kept,) = eventually(
        lambda: server.get("/v3/scores", id=score["id"], fields="core")["data"],
        "the score sent in a langfuse-* environment",
    )
    assert kept["environment"] == f"{ran.tag}-check"


@pytest.mark.xfail(strict=True, reason=(
    "Langfuse 4.16: a stock Home's Env selector leaves out only 'langfuse-*' by default "
    "(web/src/hooks/useEnvironmentFilter.tsx), a prefix public ingestion strips from every "
    "SDK's environment, and the curated Langfuse Home has no saved filter; 'sdk-experiment' "
    "is hidden by default in the tables only (DEFAULT_SIDEBAR_HIDDEN_ENVIRONMENTS). What "
    "the team does instead, once per project: a Home dashboard filtering it out (the test "
    "below, docs/langfuse.md#environments)"))  # fmt: skip
def test_the_home_dashboards_default_filter_leaves_evaluation_traffic_out(ran, server):
    from eval_pipeline_tests.langfuse_rules import home_dashboard_shows

    version = server.get("/health")["version"]
    if not version.lstrip("v").startswith("4.16."):
        pytest.skip(f"the Home dashboard's rule is read from 4.16.0's source; check {version}'s")
    status, options = server.trpc(
        "projects.environmentFilterOptions", {"projectId": server.project_id()}
    )
    assert status == 200, options
    assert ENVIRONMENT in {o["environment"] for o in options}  # evaluation traffic is there
    assert not home_dashboard_shows(ENVIRONMENT)


HOME = "langfuse-home-dashboard"  # the curated Home dashboard (LANGFUSE_HOME_DASHBOARD_ID)
WITHOUT_EVALUATIONS = {"type": "stringOptions", "column": "environment",
                       "operator": "none of", "value": [ENVIRONMENT]}  # fmt: skip


def environments_counted(server: Server, filters: list[dict[str, Any]],
                         version: str = "v2") -> dict[str, int]:  # fmt: skip
    """Traces per environment, as a Home dashboard widget queries them under ``filters``
    (dashboard.executeQuery: the v2 views the v4 UI reads; v1 on a ``dual`` server for a
    user without the v4 preview)."""
    now = datetime.now(UTC)
    start, end = ((now + d).isoformat().replace("+00:00", "Z")
                  for d in (timedelta(days=-1), timedelta(hours=1)))  # fmt: skip
    query = {"view": "traces", "dimensions": [{"field": "environment"}],
             "metrics": [{"measure": "count", "aggregation": "count"}], "filters": filters,
             "timeDimension": None, "orderBy": None, "fromTimestamp": start,
             "toTimestamp": end}  # fmt: skip
    status, rows = server.trpc("dashboard.executeQuery", {
        "projectId": server.project_id(), "query": query, "version": version})  # fmt: skip
    assert status == 200, rows
    return {r["environment"]: int(r["count_count"]) for r in rows}


def test_a_home_dashboard_filtering_the_evaluation_environment_leaves_it_out(ran, server):
    """Langfuse's own way to choose what Home shows every member of a project (4.16): the
    project's Home dashboard (Project.homeDashboardId, "Set default"), whose saved filters
    Home applies under its environment selector (web/src/pages/project/[projectId]/
    index.tsx). docs/langfuse.md#environments's recipe, done through the UI's own API:
    Langfuse Home cloned as the project's Home, its saved filter ``environment none of
    sdk-experiment``; Home's widgets then count no evaluation trace. Put back after."""
    project = server.project_id()
    status, before = server.trpc("dashboard.getHomeDashboard", {"projectId": project})
    assert status == 200, before
    clone = server.trpc_mutation("dashboard.cloneDashboard", {
        "projectId": project, "dashboardId": HOME, "setAsHome": True})  # fmt: skip
    try:
        server.trpc_mutation("dashboard.updateDashboardFilters", {
            "projectId": project, "dashboardId": clone["id"],
            "filters": [WITHOUT_EVALUATIONS]})  # fmt: skip
        status, home = server.trpc("dashboard.getHomeDashboard", {"projectId": project})
        assert status == 200 and home["dashboard"]["id"] == clone["id"], home
        for version in ("v2", "v1") if server.mode == "dual" else ("v2",):
            assert ENVIRONMENT in environments_counted(server, [], version)
            shown = environments_counted(server, home["dashboard"]["filters"], version)
            assert ENVIRONMENT not in shown, (version, shown)
    finally:
        server.trpc_mutation("dashboard.setHomeDashboard", {
            "projectId": project, "dashboardId": before["homeDashboardId"]})  # fmt: skip
        server.trpc_mutation("dashboard.delete", {"projectId": project,
                                                  "dashboardId": clone["id"]})  # fmt: skip


# --- datasets ----------------------------------------------------------------------------------
def test_datasets_sync_creates_once_then_finds_everything_unchanged(ran, server):
    from eval_pipeline.agents.project import load_project

    cases = len(load_project(ran.root / "eval-pipeline.yaml").suite(ran.suite).load_cases())
    first, second = ran.runs["sync1"]["stdout"], ran.runs["sync2"]["stdout"]
    assert " created" in first and "0 created, 0 updated" in second and "0 archived" in second
    name = f"eval-pipeline/{ran.suite}"
    listed = server.get("/dataset-items", datasetName=name, limit=100)
    assert listed["meta"]["totalItems"] == cases
    assert all(i["id"] == f"{ran.suite}:{i['metadata']['case_id']}" for i in listed["data"])


def test_a_suite_on_the_langfuse_dataset_runs_the_same_cases_as_an_experiment_of_it(ran, server):
    lf, fresh = ran.runs["lf"], ran.runs["fresh"]
    assert lf["result"]["run"]["dataset_version"] == fresh["result"]["run"]["dataset_version"]
    exp = server.experiment(lf["run_id"])
    assert exp["datasetId"] == server.dataset(f"eval-pipeline/{ran.suite}")["id"]
    items = server.experiment_items(lf["run_id"])
    assert sorted(i["experimentItemId"] for i in items) == sorted(
        f"{ran.suite}:{i['item_id']}" for i in lf["result"]["items"]
    )


def test_the_datasets_list_counts_the_runs(ran, server, request):
    if server.mode == "events_only":
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "Langfuse 4.16 events_only: the Datasets list counts Postgres dataset_runs rows, "
            "which no public API writes in events_only (POST dataset-run-items answers the "
            "experiment id and stores nothing); fixed after 4.16 by langfuse/langfuse#16814 "
            "(the count read from events)")))  # fmt: skip
    dataset = server.dataset(f"eval-pipeline/{ran.suite}")
    status, metrics = server.trpc(
        "datasets.allDatasetsMetrics",
        {"projectId": server.project_id(), "datasetIds": [dataset["id"]]},
    )
    assert status == 200, metrics
    (row,) = metrics["metrics"]
    assert int(row["countDatasetRuns"]) >= 3 and row["lastRunAt"], row


def test_legacy_reads_find_the_runs_dataset_run(ran, server):
    if server.mode == "events_only":
        pytest.skip("events_only: dataset-run reads answer 404; experiments replace them")
    name, run_id = f"eval-pipeline/{ran.suite}", ran.runs["fresh"]["run_id"]
    runs = server.get(f"/datasets/{quote(name, safe='')}/runs", limit=100)["data"]
    assert run_id in {r["name"] for r in runs}
    found = server.http.get(f"/api/public/datasets/{quote(name, safe='')}/runs/{run_id}")
    assert found.status_code == 200, found.text


# --- what the CLI says ---------------------------------------------------------------------------
def test_the_cli_says_where_the_run_went_in_langfuse(ran):
    fresh = ran.runs["fresh"]
    said = fresh["stdout"] + fresh["stderr"]
    assert "sent to Langfuse" in said
    assert "experiment" in said.lower() and fresh["run_id"] in said


def test_no_request_was_refused(ran, server):
    refused = [
        s
        for s in server.proxy.seen
        if s.status >= 400
        # (expected: the dataset's existence check before its first sync, and the write
        # mode asked once: v3's reads answer 404 in events_only, keeps_dataset_runs)
        and not (s.status == 404 and s.method == "GET" and "/v2/datasets/" in s.path)
        and not (
            s.status == 404
            and s.path.split("?")[0] == "/api/public/traces"
            and "events_only mode" in s.body
        )
    ]
    assert not refused, [(s.method, s.path, s.status, s.body) for s in refused][:10]


# --- prompt metrics (UI) -----------------------------------------------------------------------
@pytest.mark.xfail(
    strict=True,
    reason="item scores sit on the item's root observation, where "
    "the experiment views show them; Langfuse's prompt metrics count trace-level scores "
    "and prompt-linked GENERATION observations' only (docs/langfuse.md)",
)
def test_prompt_version_metrics_count_each_trace_score_once(ran, server):
    prompt = server.get(f"/v2/prompts/{quote(ran.prompt, safe='')}", version=3)
    label = ran.runs["label"]
    status, rows = eventually(
        lambda: (
            (
                r := server.trpc(
                    "prompts.versionMetrics",
                    {"projectId": server.project_id(), "promptIds": [prompt["id"]]},
                )
            )
            and r[1]
            and r
        ),
        "the prompt version's metrics",
    )
    assert status == 200, rows
    (row,) = rows
    scores = row["traceScores"].get("order_correctness-API-NUMERIC") or {}
    assert len(scores.get("values") or []) == label["items"], (
        server.mode,
        len(scores.get("values") or []),
    )


# --- production traces --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def production(ran, server) -> dict[str, Any]:
    """A few production traces of the suite's agent (the example's day file, through the
    SDK, environment "production"), one in the evaluation environment, read back through our
    trace source and scored back as the trace_scores asset does."""
    from langfuse import Langfuse, propagate_attributes
    from langfuse._client.resource_manager import LangfuseResourceManager

    from eval_pipeline.agents.project import load_project
    from eval_pipeline.core.store.results_store import ResultsStore
    from eval_pipeline.core.traces.observations import score_traces
    from eval_pipeline.integrations import langfuse_scores
    from eval_pipeline.integrations.langfuse_client import LangfuseSettings
    from eval_pipeline.integrations.services import Services

    LangfuseResourceManager.reset()
    settings = LangfuseSettings(PUBLIC_KEY, SECRET_KEY, server.proxy.url)
    suite = load_project(ran.root / "eval-pipeline.yaml").suite(ran.suite)
    day_file = ran.root / "datasets/drive_thru/traces/2026-11-19.jsonl"
    lines = [json.loads(x) for x in day_file.read_text().splitlines()[:5]]
    ids = []
    for environment in ("production", ENVIRONMENT):
        client = Langfuse(
            public_key=PUBLIC_KEY,
            secret_key=SECRET_KEY,
            base_url=server.proxy.url,
            environment=environment,
        )
        for i, line in enumerate(lines if environment == "production" else lines[:1]):
            trace_id = Langfuse.create_trace_id(seed=f"{ran.tag}:{environment}:{i}")
            with (
                propagate_attributes(trace_name=suite.trace_name, tags=["production"]),
                client.start_as_current_observation(
                    trace_context={"trace_id": trace_id},
                    name=suite.trace_name,
                    as_type="agent",
                    input=json.loads(line["input"]),
                    metadata=line["metadata"],
                ) as root,
            ):
                with client.start_as_current_observation(
                    name="llm",
                    as_type="generation",
                    model="gpt-4o-mini",
                    usage_details={"input": 1000, "output": 50},
                    cost_details={"total": 0.0003},
                ) as generation:
                    generation.update(output="ok")
                root.update(output=json.loads(line["output"]))
            if environment == "production":
                ids.append(trace_id)
        client.flush()
    source = Services(settings, ran.root / "prompts").trace_source()
    today = datetime.now(UTC).date()
    # (ingestion is asynchronous: a root can be readable before its generation is, so
    # wait for each trace's tokens too)
    read = eventually(
        lambda: (
            (r := list(source.traces(suite, today)))
            and len([x for x in r if x.trace_id in ids and x.input_tokens]) == len(ids)
            and r
        ),
        "the production traces, with their generations, through LangfuseTraceSource",
    )
    scores = score_traces(read, suite.trace_evaluators)
    store = ResultsStore(f"sqlite:///{ran.root.parent / 'traces-store.sqlite'}")
    environments = {r.trace_id: r.environment for r in read}  # (as trace_scores sends them)
    report = Services(settings, ran.root / "prompts").write_back(
        store, langfuse_scores.trace_score_payloads(scores, environments)
    )
    return {"ids": ids, "read": read, "report": report, "lines": lines}


def test_production_traces_read_back_with_their_totals_and_without_evaluation_runs(production):
    read = production["read"]
    assert sorted(r.trace_id for r in read) == sorted(production["ids"])  # sdk-experiment: out
    assert all((r.input_tokens, r.output_tokens, r.cost_usd) == (1000, 50, 0.0003) for r in read)
    assert sorted(r.metadata.get("category") for r in read) == sorted(
        x["metadata"]["category"] for x in production["lines"]
    )
    assert all("production" in r.tags and r.output for r in read)
    report = production["report"]
    assert report.sent == 5 * len(read) and not report.queued and not report.set_aside


def test_production_trace_scores_are_in_their_traces_environment(production, server):
    trace_id = production["ids"][0]
    scores = eventually(
        lambda: server.get("/v3/scores", traceId=trace_id, fields="core,subject", limit=50)["data"],
        "the production trace's scores",
    )
    assert {s["name"] for s in scores} >= {"eval_no_error", "eval_tool_protocol"}
    assert {s["subject"]["kind"] for s in scores} == {"trace"}
    assert {s["environment"] for s in scores} == {"production"}
