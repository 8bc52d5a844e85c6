"""A planted API key never reaches anything we write, even when the provider echoes it in
its error messages (as OpenAI's 401 does); the local test servers bind to loopback only."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

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
    from eval_pipeline.core.redact import redact, register_secret

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
    from eval_pipeline.core.redact import redact_url, scrub

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
