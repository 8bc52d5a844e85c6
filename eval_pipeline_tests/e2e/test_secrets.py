"""A planted API key never reaches anything we write, even when the provider echoes it in
its error messages (as OpenAI's 401 does); the local test servers bind to loopback only."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from eval_pipeline_tests.helpers import CONFIG_ENV, EXAMPLES
from eval_pipeline_tests.langfuse_server import LangfuseTestServer
from eval_pipeline_tests.model_server import LocalOpenAIServer

PLANTED = "sk-planted-cli-9d41c7e2b8"
CLI = str(Path(sys.executable).parent / "eval-pipeline")


def echo_key(body: dict) -> tuple[int, str] | None:
    """Refuse orders of hash browns with a 401 that quotes the caller's key."""
    text = " ".join(str(m.get("content")) for m in body["messages"] if m["role"] == "user")
    if "hash brown" in text.lower():
        return 401, f"Incorrect API key provided: {PLANTED}. You can find your API key at …"
    return None


def test_planted_key_is_in_no_output_log_report_or_store(tmp_path):
    home, out = tmp_path / "home", tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    with LocalOpenAIServer(fault=echo_key) as server:
        env |= {"EVAL_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
                "EVAL_LLM_BASE_URL": server.base_url, "EVAL_LLM_API_KEY": PLANTED}  # fmt: skip
        run = subprocess.run(
            [CLI, "run", "--suite", "drive_thru", "--json", str(out / "result.json"),
             "--junit", str(out / "junit.xml"), "--report", str(out / "report.md")],
            cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        doctor = subprocess.run([CLI, "doctor"], cwd=EXAMPLES, env=env, capture_output=True,
                                text=True, timeout=120)  # fmt: skip
        assert server.app.state.stats.get("fault_401", 0) > 0  # the key was echoed back
    # A 401 is not the agent's failure: the run says it could not measure those items
    # (ERROR, exit 2) and still writes every file, the echoed key masked in each.
    assert run.returncode == 2, run.stderr
    result = (out / "result.json").read_text()
    assert '"verdict": "ERROR"' in result and "HTTP 401" in result
    assert "Incorrect API key provided: ***" in result
    written = [p for p in [*out.rglob("*"), *home.rglob("*")] if p.is_file()]
    assert {"result.json", "junit.xml", "report.md"} <= {p.name for p in written}
    assert any(p.name.endswith(".sqlite") for p in written)  # the results store
    leaks = [p for p in written if PLANTED.encode() in p.read_bytes()]
    assert not leaks, leaks
    for stream in (run.stdout, run.stderr, doctor.stdout, doctor.stderr):
        assert PLANTED not in stream


def non_loopback_address() -> str | None:
    """This machine's address on its default route, if it has one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


@pytest.mark.parametrize("make", [LocalOpenAIServer, LangfuseTestServer])
def test_test_servers_listen_on_loopback_only(make):
    with make() as server:
        background = getattr(server, "_server", server)
        sockets = [s for srv in background.server.servers for s in srv.sockets]
        assert sockets and {s.getsockname()[0] for s in sockets} == {"127.0.0.1"}
        address = non_loopback_address()
        if address is not None:  # reachable on loopback, refused on the machine's address
            with pytest.raises(OSError):
                socket.create_connection((address, background.port), timeout=2).close()
        socket.create_connection(("127.0.0.1", background.port), timeout=2).close()


def test_a_placeholder_key_is_not_a_secret_to_mask():
    """llama.cpp takes any key ("none"), a CI replay a dummy one ("replay"): masking them
    turned "replay: no recorded answer" into "***: no recorded answer"."""
    from eval_pipeline.core.util.redact import redact, register_secret

    for placeholder in ("none", "replay", "sk-team"):
        register_secret(placeholder)
    register_secret("sk-a-real-looking-key-123")
    text = "replay: none of sk-team's answers; key sk-a-real-looking-key-123"
    assert redact(text) == "replay: none of sk-team's answers; key ***"


URL_PASSWORD = "hunter2-url-password"


def test_credentials_in_urls_reach_no_output_and_recordings_still_replay(tmp_path):
    """A password in EVAL_LLM_BASE_URL (``http://user:password@host/v1``) was printed in the
    report's Model line, --json, --report, the store's model_params and the recordings.
    Every one of them now shows it masked, and the recording, stored masked, still
    replays."""
    from eval_pipeline.core.util.redact import redact_url, scrub

    assert redact_url("http://u:p4ss@h/v1?api_key=abc&q=1") == "http://u:***@h/v1?api_key=***&q=1"
    assert scrub({"key": "abc", "messages": [{"token": "t", "content": "hi"}]}) == {
        "key": "***", "messages": [{"token": "***", "content": "hi"}]}  # fmt: skip
    home, out = tmp_path / "home", tmp_path / "out"
    out.mkdir()
    project = tmp_path / "project"
    import shutil

    shutil.copytree(EXAMPLES, project, ignore=shutil.ignore_patterns(".eval_home", "recordings"))
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    with LocalOpenAIServer() as server:
        base = server.base_url.replace("http://", f"http://team:{URL_PASSWORD}@")
        env |= {"EVAL_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
                "EVAL_LLM_BASE_URL": base, "EVAL_LLM_API_KEY": "sk-url-test-key-1234",
                "EVAL_LLM_MODEL": "offline"}  # fmt: skip
        recorded = subprocess.run(
            [CLI, "run", "--suite", "drive_thru", "--tier", "smoke", "--record",
             "--json", str(out / "result.json"), "--report", str(out / "report.md")],
            cwd=project, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    replay_env = {k: v for k, v in env.items() if not k.startswith("EVAL_LLM_")}
    replayed = subprocess.run([CLI, "run", "--suite", "drive_thru", "--tier", "smoke",
                               "--replay"], cwd=project, env=replay_env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    written = [p for p in [*out.rglob("*"), *home.rglob("*"),
                           *(project / "recordings").rglob("*")] if p.is_file()]  # fmt: skip
    assert any(p.suffix == ".jsonl" for p in written)  # the recording
    leaks = [p for p in written if URL_PASSWORD.encode() in p.read_bytes()]
    assert not leaks, leaks
    for stream in (recorded.stdout, recorded.stderr, replayed.stdout, replayed.stderr):
        assert URL_PASSWORD not in stream
    assert "team:***@" in (out / "result.json").read_text()


MODEL_KEY = "sk-planted-model-key-5be0a1"
URL_SECRET = "planted-url-password-77c1"
LANGFUSE_SECRET = "sk-lf-planted-secret-0f93d2"


def test_planted_secrets_reach_no_dagster_event_log_nor_langfuse_payload(tmp_path):
    """The demo (every suite through Dagster, traced to and scored in Langfuse) with a key,
    a URL password and a Langfuse secret planted: none is in what it prints, in any file it
    writes (the Dagster instance's event logs and run storage, the results store) nor in
    anything Langfuse received (traces, observations, scores, datasets, experiments)."""
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    with LocalOpenAIServer() as model, LangfuseTestServer(secret_key=LANGFUSE_SECRET) as langfuse:
        seed_examples_prompts(langfuse)
        env |= {"EVAL_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(tmp_path / "dagster"),
                "EVAL_LLM_BASE_URL": model.base_url.replace("http://", f"http://ci:{URL_SECRET}@"),
                "EVAL_LLM_API_KEY": MODEL_KEY, "EVAL_LLM_MODEL": "offline",
                **langfuse.env()}  # fmt: skip
        demo = subprocess.run([CLI, "demo"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip
        assert model.requests > 0, demo.stdout[-3000:] + demo.stderr[-3000:]
        with langfuse.state.lock:
            sent = json.dumps(asdict_state(langfuse.state), default=str)
    assert demo.returncode in (0, 1), demo.stdout + demo.stderr
    assert '"observations"' in sent and len(sent) > 10_000  # Langfuse got the runs
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".db" for p in written)  # Dagster's event log storage
    for secret in (MODEL_KEY, URL_SECRET, LANGFUSE_SECRET):
        assert secret not in demo.stdout + demo.stderr, secret
        assert secret not in sent, secret
        leaks = [p for p in written if secret.encode() in p.read_bytes()]
        assert not leaks, (secret, leaks)


def asdict_state(state) -> dict:
    return {name: getattr(state, name) for name in ("prompts", "datasets", "dataset_items",
                                                     "dataset_runs", "dataset_run_items",
                                                     "scores", "score_configs",
                                                     "observations")}  # fmt: skip


def seed_examples_prompts(langfuse: LangfuseTestServer) -> None:
    """The examples' prompt versions and labels, in the Langfuse server (where a project
    with Langfuse configured reads them)."""
    prompts = EXAMPLES / "prompts"
    labels = yaml.safe_load((prompts / "labels.yaml").read_text())
    for name, by_label in labels.items():
        for version in sorted(int(p.stem[1:]) for p in (prompts / name).glob("v*.yaml")):
            text = yaml.safe_load((prompts / name / f"v{version}.yaml").read_text())
            pointed = [label for label, v in by_label.items() if v == version]
            langfuse.seed_prompt(name, text["prompt"], type=text["type"],
                                 config=text.get("config"), labels=pointed)  # fmt: skip


TOOL_SECRET = "planted-tool-token-31f7a9"


def test_a_tools_secrets_in_urls_and_bodies_are_recorded_masked_and_still_replay(tmp_path):
    """Recordings, which teams commit, kept a tool's ``?api_key=…`` and ``{"key": …}``; the
    file now holds them masked, and the same requests still replay from it."""
    import httpx
    import requests

    from eval_pipeline.llm.recording import Belongs, RecordingSession
    from eval_pipeline_tests.model_server import BackgroundServer
    from eval_pipeline_tests.zoo.weather_api import weather_api

    api = BackgroundServer(weather_api())
    api.start()
    url = f"http://127.0.0.1:{api.port}"

    def calls() -> list:
        got = requests.get(f"{url}/weather", params={"city": "Paris", "api_key": TOOL_SECRET},
                           timeout=5)  # fmt: skip
        posted = httpx.post(f"{url}/weather", json={"city": "Oslo", "key": TOOL_SECRET})
        return [got.status_code, got.json(), posted.status_code]

    path, belongs = tmp_path / "tools.jsonl", Belongs("tools", "v0")
    try:
        with RecordingSession(path, "record", belongs):
            live = calls()
        sent = api.app.state.stats["requests"]
        with RecordingSession(path, "replay", belongs) as session:
            again = calls()
    finally:
        api.stop()
    assert again == live and session.misses == 0 and api.app.state.stats["requests"] == sent
    text = path.read_text()
    assert TOOL_SECRET not in text and "api_key=***" in text and '"key": "***"' in text
