"""Secrets that come back in answers reach nothing we write: an OAuth token endpoint's
``access_token``/``refresh_token``/``id_token`` (and the token echoed by the API it opens)
are recorded masked and still replay, scoring the same; a URL password that a server
echoes as a ``Basic`` header (base64 of ``user:password``) is masked on stdout, in the
results file, the report, the store, the recordings and Langfuse. Each run is a team's
project in a directory outside this repository."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from urllib.parse import parse_qsl, quote

import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from eval_pipeline_tests.e2e.test_secrets import asdict_state
from eval_pipeline_tests.langfuse_server import LangfuseTestServer
from eval_pipeline_tests.model_server import BackgroundServer, create_app
from eval_pipeline_tests.stranger import cases_yaml

CLI = str(Path(sys.executable).parent / "eval-pipeline")
SUITE = {"dataset": "evals/weather", "evaluators": ["correctness", "completeness"],
         "thresholds": {"primary_metric": "completeness"}}  # fmt: skip
CLIENT_SECRET = "client-secret-4be1d07c93"

# A team's callable agent whose tool logs in to its weather service (OAuth client
# credentials, form-encoded as RFC 6749 has it), then asks for the forecast with the
# token, in the Authorization header and in the body (``proof``: a name we do not know).
OAUTH_AGENT = """
import os
import requests


def answer(input, ctx):
    city = next((c for c in ("Paris", "Oslo", "Tokyo", "Lima") if c in input["message"]), None)
    if city is None:
        return {"response": "Hello! Ask me about the weather.", "tools_called": []}
    api = os.environ["WEATHER_API_URL"]
    grant = requests.post(api + "/oauth/token", timeout=5, data={
        "grant_type": "client_credentials", "client_id": "weather-app",
        "client_secret": os.environ["WEATHER_CLIENT_SECRET"]}).json()
    token = grant["access_token"]
    found = requests.post(api + "/forecast", json={"city": city, "proof": token}, timeout=5,
                          headers={"Authorization": f"Bearer {token}"})
    found.raise_for_status()
    forecast = found.json()["forecast"]
    return {"response": f"In {city}: {forecast}", "tools_called": ["get_weather"]}
"""

# A callable agent on ctx.model: the endpoint of EVAL_LLM_BASE_URL, password and all.
CTX_MODEL_AGENT = """
def answer(input, ctx):
    return {"response": ctx.model.invoke(input["message"]).content, "tools_called": []}
"""


def oauth_weather_api() -> Starlette:
    """A token endpoint issuing fresh tokens, and a forecast that needs one (and echoes it
    back, as some APIs do)."""
    issued: set[str] = set()
    stats = {"requests": 0}

    async def token(request: Request) -> JSONResponse:
        stats["requests"] += 1
        form = dict(parse_qsl((await request.body()).decode()))
        if form.get("client_secret") != CLIENT_SECRET:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        grant = {kind: f"{kind[:2]}-{uuid.uuid4().hex}" for kind in
                 ("access_token", "refresh_token", "id_token")}  # fmt: skip
        issued.add(grant["access_token"])
        return JSONResponse({**grant, "token_type": "Bearer", "expires_in": 3600})

    async def forecast(request: Request) -> JSONResponse:
        stats["requests"] += 1
        body = await request.json()
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if bearer not in issued or body.get("proof") != bearer:
            return JSONResponse({"error": "invalid_token"}, status_code=401)
        weather = {"Paris": "sunny, 18 C", "Oslo": "snow, -3 C"}.get(body["city"], "mild")
        return JSONResponse({"forecast": weather, "granted_to": bearer})

    app = Starlette(routes=[Route("/oauth/token", token, methods=["POST"]),
                            Route("/forecast", forecast, methods=["POST"])])  # fmt: skip
    app.state.stats, app.state.issued = stats, issued
    return app


def echoing_401(app):
    """An OpenAI-style endpoint that refuses every chat completion with a 401 quoting the
    Authorization header it got (``Basic …`` when the base URL carries ``user:password``)."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope["path"].endswith("/chat/completions"):
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            message = f"Invalid credentials: {headers.get('authorization')}"
            error = {"error": {"message": message, "type": "invalid_request_error"}}
            await JSONResponse(error, status_code=401)(scope, receive, send)
            return
        await app(scope, receive, send)

    return wrapped


def project(root: Path, name: str, source: str) -> Path:
    (root / "evals" / "weather").mkdir(parents=True)
    (root / "evals" / "weather" / "cases.yaml").write_text(cases_yaml())
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    (root / name / "agent.py").write_text(textwrap.dedent(source))
    suites = {"weather": {"agent": f"{name}.agent:answer", **SUITE}}
    (root / "eval-pipeline.yaml").write_text(yaml.safe_dump({"suites": suites}))
    return root


def cli(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "run", "--suite", "weather", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def clean_env(home: Path, langfuse: LangfuseTestServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVAL_", "LANGFUSE_", "OPENAI_", "DAGSTER_"))}  # fmt: skip
    return env | {"EVAL_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
                  **langfuse.env()}  # fmt: skip


def leaks(secrets: list[str], root: Path, streams: list[str], sent: str) -> list[str]:
    """Where any of ``secrets`` is found: a file under ``root``, a stream, Langfuse."""
    files = [p for p in root.rglob("*") if p.is_file()]
    found = [f"{p.relative_to(root)}: {s}" for p in files for s in secrets
             if s.encode() in p.read_bytes()]  # fmt: skip
    found += [f"output: {s}" for text in streams for s in secrets if s in text]
    at = {s: sent.index(s) for s in secrets if s in sent}
    return found + [f"langfuse: …{sent[max(0, i - 300) : i + 60]}" for i in at.values()]


def test_oauth_tokens_from_answers_are_masked_everywhere_and_still_replay(tmp_path):
    root = project(tmp_path / "team-repo", "oauth_weather", OAUTH_AGENT)
    out = tmp_path / "out"
    out.mkdir()
    api = BackgroundServer(oauth_weather_api())
    api.start()
    try:
        with LangfuseTestServer() as langfuse:
            env = clean_env(tmp_path / "home", langfuse) | {
                "WEATHER_API_URL": f"http://127.0.0.1:{api.port}",
                "WEATHER_CLIENT_SECRET": CLIENT_SECRET}
            recorded = cli(root, env, "--record", "--json", str(out / "recorded.json"),
                           "--report", str(out / "recorded.md"))  # fmt: skip
            sent_live = api.app.state.stats["requests"]
            replayed = cli(root, env, "--replay", "--json", str(out / "replayed.json"),
                           "--report", str(out / "replayed.md"))  # fmt: skip
            with langfuse.state.lock:
                sent = json.dumps(asdict_state(langfuse.state), default=str)
    finally:
        api.stop()
    tokens = sorted(api.app.state.issued)
    assert recorded.returncode in (0, 1), recorded.stdout + recorded.stderr
    assert tokens and sent_live > 0  # the tool logged in and used its tokens
    recording = next((root / "recordings").rglob("*.jsonl")).read_text()
    assert '"access_token": "***"' in recording and '"refresh_token": "***"' in recording
    assert '"proof": "***"' in recording and '"granted_to": "***"' in recording
    # The replay reached nothing, and the agent, handed "***" as its token, sent "***" on:
    # every request was found and each item scored as it did live (the recorded run is the
    # replay's baseline: its gate finds every pair tied).
    assert "0 pairs worse, 0 better, 6 tied" in replayed.stdout, replayed.stdout
    assert api.app.state.stats["requests"] == sent_live
    live = scores(out / "recorded.json")
    assert live and all(error is None for _, error in live.values()), live
    assert scores(out / "replayed.json") == live
    everything = [*tokens, *(t[3:] for t in tokens), CLIENT_SECRET]
    found = leaks(everything, tmp_path, [recorded.stdout, recorded.stderr, replayed.stdout,
                                        replayed.stderr], sent)  # fmt: skip
    assert not found, found


def scores(result: Path) -> dict[str, object]:
    """Each item's scores and error in a results file."""
    items = json.loads(result.read_text())["items"]
    return {f"{i['item_id']}#{i['repeat']}": (i["scores"], i["error"]) for i in items}


USER, PASSWORD = "bob", "pw-basic-6e2f90c1"


def test_a_url_password_echoed_as_a_basic_header_is_masked_everywhere(tmp_path):
    root = project(tmp_path / "team-repo", "ctx_model_agent", CTX_MODEL_AGENT)
    out = tmp_path / "out"
    out.mkdir()
    server = BackgroundServer(echoing_401(create_app()))
    server.start()
    try:
        with LangfuseTestServer() as langfuse:
            base = f"http://{USER}:{PASSWORD}@127.0.0.1:{server.port}/v1"
            env = clean_env(tmp_path / "home", langfuse) | {
                "EVAL_LLM_BASE_URL": base, "EVAL_LLM_MODEL": "gpt-4o-mini"}
            run = cli(root, env, "--record", "--json", str(out / "result.json"),
                      "--junit", str(out / "junit.xml"), "--report", str(out / "report.md"))
            with langfuse.state.lock:
                sent = json.dumps(asdict_state(langfuse.state), default=str)
    finally:
        server.stop()
    result = (out / "result.json").read_text()
    assert run.returncode == 2 and "Invalid credentials: Basic ***" in result, run.stdout
    pair = f"{USER}:{PASSWORD}".encode()
    forms = [PASSWORD, quote(PASSWORD), base64.b64encode(pair).decode().rstrip("="),
             base64.urlsafe_b64encode(pair).decode().rstrip("=")]
    found = leaks(forms, tmp_path, [run.stdout, run.stderr], sent)
    assert not found, found
    assert any(p.suffix == ".sqlite" for p in (tmp_path / "home").rglob("*"))  # the store
