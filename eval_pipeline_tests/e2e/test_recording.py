"""Record and replay never pass what they did not test: a stale recording, an agent that
swallows the error of a request nobody recorded, a connection outside the clients we
record, a recording that captured nothing; and many threads record and replay every
request. Each test runs a team's project in a directory outside this repository."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import requests
import yaml

from eval_pipeline.llm.recording import Belongs, RecordingSession, request_key
from eval_pipeline_tests.model_server import BackgroundServer, LocalOpenAIServer
from eval_pipeline_tests.stranger import WeatherModel, cases_yaml
from eval_pipeline_tests.zoo.weather_api import weather_api

CLI = str(Path(sys.executable).parent / "eval-pipeline")
ZOO = Path(__file__).parents[1] / "zoo"
SUITE = {"dataset": "evals/weather", "evaluators": ["groundedness", "correctness",
                                                     "completeness", "overall"],
         "thresholds": {"primary_metric": "overall", "min_mean": {"overall": 0.7}}}  # fmt: skip

# A callable agent that asks the weather API with requests and falls back to a guess when
# the call fails: a team's defensive code, which would hide a replay miss.
FALLBACK_AGENT = """
import os
import requests


def answer(input, ctx):
    city = next((c for c in ("Paris", "Oslo", "Tokyo", "Lima") if c in input["message"]), None)
    if city is None:
        return {"response": "Hello! Ask me about the weather.", "tools_called": []}
    try:
        found = requests.get(os.environ["WEATHER_API_URL"] + "/weather",
                             params={"city": city}, timeout=5).json()["forecast"]
    except Exception:
        found = {"Paris": "sunny, 18 C", "Oslo": "snow, -3 C"}.get(city, "mild")
    called = ["get_weather"] + (["get_time"] if "time" in input["message"].lower() else [])
    times = {"Paris": "14:00", "Tokyo": "22:00", "Lima": "08:00"}
    return {"response": f"In {city}: {found}, {times.get(city, '')}", "tools_called": called}
"""

# The same, asking over a raw socket: no HTTP client we intercept sees it.
RAW_SOCKET_AGENT = FALLBACK_AGENT.replace("import requests", "import socket").replace(
    """        found = requests.get(os.environ["WEATHER_API_URL"] + "/weather",
                             params={"city": city}, timeout=5).json()["forecast"]""",
    """        port = int(os.environ["WEATHER_API_URL"].rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(f"GET /weather?city={city} HTTP/1.0\\\\r\\\\n\\\\r\\\\n".encode())
            found = sock.recv(65536).decode().rsplit('"forecast":"', 1)[1].split('"')[0]""",
)

# A callable that calls the model with urllib (http.client): neither recorded nor counted.
URLLIB_AGENT = """
import json
import os
import urllib.request


def answer(input, ctx):
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": input["message"]}]}
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        reply = json.loads(response.read())["choices"][0]["message"]["content"]
    return {"response": reply, "tools_called": []}
"""

# A callable on ctx.model: with no endpoint configured, that is the offline model.
CTX_MODEL_AGENT = """
def answer(input, ctx):
    return {"response": ctx.model.invoke(input["message"]).content, "tools_called": []}
"""


class Team:
    def __init__(self, root: Path, model: LocalOpenAIServer, api: BackgroundServer):
        self.root, self.model, self.api = root, model, api

    @property
    def api_requests(self) -> int:
        return self.api.app.state.stats["requests"]

    def env(self, *, endpoint: bool = True) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("EVAL_", "LANGFUSE_", "OPENAI_", "DAGSTER_"))}  # fmt: skip
        env |= {"EVAL_HOME": str(self.root / ".eval_home"),
                "WEATHER_API_URL": f"http://127.0.0.1:{self.api.port}"}  # fmt: skip
        if endpoint:  # ours for ctx.model, the agents' own (the openai SDK reads them)
            env |= {"EVAL_LLM_BASE_URL": self.model.base_url, "EVAL_LLM_API_KEY": "sk-team",
                    "EVAL_LLM_MODEL": "gpt-4o-mini", "OPENAI_BASE_URL": self.model.base_url,
                    "OPENAI_API_KEY": "sk-team"}  # fmt: skip
        return env

    def cli(self, *args: str, endpoint: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([CLI, *args], cwd=self.root, env=self.env(endpoint=endpoint),
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    def suite(self, name: str, agent: str, source: str | None = None) -> None:
        """Add a suite; ``source`` is its agent module's text (package ``name``)."""
        if source is not None:
            (self.root / name).mkdir()
            (self.root / name / "__init__.py").write_text("")
            (self.root / name / "agent.py").write_text(textwrap.dedent(source))
        project = yaml.safe_load((self.root / "eval-pipeline.yaml").read_text())
        project["suites"][name] = {"agent": agent, **SUITE}
        (self.root / "eval-pipeline.yaml").write_text(yaml.safe_dump(project))


@pytest.fixture
def team(tmp_path):
    root = tmp_path / "team-repo"
    (root / "evals" / "weather").mkdir(parents=True)
    (root / "evals" / "weather" / "cases.yaml").write_text(cases_yaml())
    shutil.copytree(ZOO / "sync_nodes", root / "zoo_sync_nodes")
    (root / "eval-pipeline.yaml").write_text(yaml.safe_dump({"suites": {
        "weather": {"agent": "zoo_sync_nodes.agent:graph", **SUITE}}}))  # fmt: skip
    model = LocalOpenAIServer(chat_model=lambda name: WeatherModel(model_name=name),
                              models=["gpt-4o-mini"])  # fmt: skip
    api = BackgroundServer(weather_api())
    with model:
        api.start()
        try:
            yield Team(root, model, api)
        finally:
            api.stop()


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_a_stale_recording_never_passes(team):
    """One case edited after recording: before, that item failed with a 404 and the run
    still passed on its thresholds (exit 0)."""
    recorded = team.cli("run", "--suite", "weather", "--record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    cases = team.root / "evals" / "weather" / "cases.yaml"
    cases.write_text(cases.read_text().replace("What time is it in Tokyo?",
                                               "What is the time in Tokyo?"))  # fmt: skip
    served = team.model.requests
    replayed = team.cli("run", "--suite", "weather", "--replay")
    assert replayed.returncode == 2, replayed.stdout + replayed.stderr
    assert team.model.requests == served  # the live server is up, and was not asked
    verdict = last_line(replayed.stdout)
    assert verdict.startswith("VERDICT: ERROR — 1 of 6 items made requests the recordings "
                              "cannot answer (replay miss ×1); first, t-tokyo: replay: no "
                              "recorded answer for POST")  # fmt: skip
    assert "messages[1].content (recorded 'What time is it in Tokyo?', now 'What is the time " \
           "in Tokyo?')" in replayed.stderr  # fmt: skip
    assert "re-record with `eval-pipeline run --suite weather --record`" in replayed.stderr


def test_an_agent_that_swallows_an_unrecorded_request_still_fails_the_run(team):
    """The agent catches the error of the request nobody recorded and answers from its
    fallback, right by luck: the item would score 1.0; it is an error instead."""
    team.suite("fallback", "fallback.agent:answer", FALLBACK_AGENT)
    recorded = team.cli("run", "--suite", "fallback", "--record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    agent = team.root / "fallback" / "agent.py"
    agent.write_text(
        agent.read_text().replace(
            'params={"city": city}', 'params={"city": city, "units": "metric"}'
        )
    )
    before = team.api_requests
    replayed = team.cli("run", "--suite", "fallback", "--replay", "--json", "out.json")
    assert replayed.returncode == 2, replayed.stdout + replayed.stderr
    assert team.api_requests == before
    result = json.loads((team.root / "out.json").read_text())
    missed = {o["item_id"] for o in result["items"] if o["error_kind"] == "replay miss"}
    assert missed == {"w-paris", "w-oslo", "t-tokyo", "t-lima", "both-paris"}
    assert all(o["fault"] == "infrastructure" for o in result["items"] if o["error"])
    # Each item's whole error is in the results file (the CLI's line shortens the first
    # one's by the middle when the recording's path is long, as under pytest-xdist in CI)
    errors = {o["item_id"]: o["error"] for o in result["items"]}
    assert "the closest recorded request differs at the query (recorded 'city=Paris', now " \
           "'city=Paris&units=metric')" in errors["w-paris"]  # fmt: skip
    assert "replay miss ×5" in replayed.stderr


def test_a_connection_outside_the_clients_we_record_is_refused_during_replay(team):
    team.suite("raw", "raw.agent:answer", RAW_SOCKET_AGENT)
    recorded = team.cli("run", "--suite", "raw", "--record")
    # The raw socket reached the API while recording; nothing recorded the model (there is
    # none), so the recording holds nothing: refused.
    assert recorded.returncode == 2 and "nothing was recorded" in recorded.stderr
    # (the file is written all the same, with nothing in it: replay it anyway)
    before = team.api_requests
    replayed = team.cli("run", "--suite", "raw", "--replay")
    assert replayed.returncode == 2, replayed.stdout + replayed.stderr
    assert team.api_requests == before  # refused before a byte was sent
    assert "(escaped call ×5)" in last_line(replayed.stdout)
    assert f"a connection to 127.0.0.1:{team.api.port} was refused" in replayed.stderr


# The fallback agent, which also reaches out by ESCAPE's route when it is set (and swallows
# whatever happens there): what a replay must refuse however it is done.
ESCAPING_AGENT = FALLBACK_AGENT.replace(
    "import requests",
    """import requests
import subprocess
import sys


def escape(city):
    route, url = os.environ.get("ESCAPE"), os.environ["WEATHER_API_URL"] + "/weather?city=" + city
    port = int(os.environ["WEATHER_API_URL"].rsplit(":", 1)[1])
    try:
        if route == "_socket":  # the C-level module, under socket.socket's methods
            import _socket
            raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
            raw.settimeout(5)
            raw.connect(("127.0.0.1", port))
            raw.send(b"GET /weather?city=Paris HTTP/1.0\\r\\n\\r\\n")
            raw.recv(100)
        elif route == "udp":
            import socket
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(
                city.encode(), ("127.0.0.1", int(os.environ["UDP_PORT"])))
        elif route == "curl":
            subprocess.run(["curl", "-s", "--max-time", "5", url], capture_output=True)
        elif route == "python":
            subprocess.run([sys.executable, "-c",
                            f"import urllib.request; urllib.request.urlopen({url!r}).read()"])
        elif route == "os.system":
            os.system(f"curl -s --max-time 5 '{url}' > /dev/null")
    except Exception:
        pass  # a defensive agent: the refusal must fail the item all the same
""",
).replace(
    """    called = ["get_weather"]""",
    """    escape(city)
    called = ["get_weather"]""",
)


@pytest.mark.parametrize("route", ["_socket", "udp", "curl", "python", "os.system"])
def test_a_replay_is_sealed_against_every_route_out_of_the_process(team, route):
    """C-level sockets, UDP, a subprocess (curl, python -c urllib) and os.system: each
    reached the network during a replay and the run passed; each is now refused before it
    happens (an audit hook, core/running/seal.py), its item an escaped call, the run ERROR."""
    import socket

    team.suite("escaping", "escaping.agent:answer", ESCAPING_AGENT)
    recorded = team.cli("run", "--suite", "escaping", "--record")
    assert recorded.returncode in (0, 1), recorded.stdout + recorded.stderr
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(0.2)
    before = team.api_requests
    env = team.env() | {"ESCAPE": route, "UDP_PORT": str(listener.getsockname()[1])}
    replayed = subprocess.run([CLI, "run", "--suite", "escaping", "--replay"], cwd=team.root,
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    datagrams = 0
    with listener:
        try:
            while True:
                listener.recv(100)
                datagrams += 1
        except TimeoutError:
            pass
    assert replayed.returncode == 2, replayed.stdout + replayed.stderr
    assert team.api_requests == before and datagrams == 0  # nothing got out
    assert "escaped call ×5" in last_line(replayed.stdout), last_line(replayed.stdout)
    said = " ".join(replayed.stderr.split())
    expected = {"_socket": "a connection to 127.0.0.1", "udp": "a datagram to 127.0.0.1",
                "curl": "a new process (subprocess.Popen: curl)",
                "python": "a new process (subprocess.Popen:",
                "os.system": "a new process (os.system: curl"}[route]  # fmt: skip
    assert expected in said, said


class Canary:
    """A raw TCP listener that counts the connections it accepts and the bytes it reads."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = self.received = 0
        self.closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.2)
            while not self.closed:
                try:
                    data = conn.recv(4096)
                except TimeoutError:  # (a connection opened long before it writes)
                    continue
                except OSError:
                    return
                if not data:
                    return
                self.received += len(data)

    def close(self) -> None:
        self.closed = True
        self.listener.close()


# An agent that, with ESCAPE set, reaches the canary in a way the first seal did not see:
# a spawned process, a socket opened at import, a thread it leaves running or joins, libc.
BESIDE_AGENT = FALLBACK_AGENT.replace(
    "import requests",
    """import requests
import ctypes
import multiprocessing
import socket
import struct
import threading
import time
import urllib.request

ROUTE = os.environ.get("ESCAPE")
PORT = int(os.environ.get("CANARY_PORT") or 0)
# opened while the agent is imported, before the run: the replay writes to it
EARLY = socket.create_connection(("127.0.0.1", PORT)) if ROUTE == "early socket" else None


def poke(times):
    for _ in range(times):
        try:
            with socket.create_connection(("127.0.0.1", PORT), timeout=2) as sock:
                sock.sendall(b"poke")
        except OSError:
            pass
        time.sleep(0.05)


def by_libc():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    # struct sockaddr_in: the family in the machine's order, then the port and address
    address = (struct.pack("=H", socket.AF_INET) + struct.pack("!H", PORT)
               + socket.inet_aton("127.0.0.1") + bytes(8))
    if libc.connect(fd, ctypes.c_char_p(address), len(address)) == 0:
        libc.write(fd, b"libc", 4)
    libc.close(fd)


def escape(city):
    try:
        if ROUTE == "multiprocessing":
            child = multiprocessing.get_context("spawn").Process(
                target=urllib.request.urlopen, args=(f"http://127.0.0.1:{PORT}/{city}", None, 2))
            child.start()
            child.join(20)
        elif ROUTE == "early socket":
            EARLY.sendall(f"GET /{city} HTTP/1.0\\r\\n\\r\\n".encode())
        elif ROUTE == "left thread":
            threading.Thread(target=poke, args=(60,), daemon=True).start()
        elif ROUTE == "joined thread":
            worker = threading.Thread(target=poke, args=(1,))
            worker.start()
            worker.join()
        elif ROUTE == "ctypes":
            by_libc()
    except Exception:
        pass  # a defensive agent: the refusal must fail the item all the same
""",
).replace(
    """    called = ["get_weather"]""",
    """    escape(city)
    called = ["get_weather"]""",
)


@pytest.mark.parametrize("route, said", [
    ("multiprocessing", "a new process (multiprocessing"),
    ("early socket", "data on a connection to 127.0.0.1:{port} opened before the replay"),
    ("left thread", "a connection to 127.0.0.1:{port} from a thread the agent started"),
    ("joined thread", "a connection to 127.0.0.1:{port} from a thread the agent started"),
    ("ctypes", "a C call to connect() through ctypes"),
])  # fmt: skip
def test_a_replay_is_sealed_against_routes_beside_the_item(team, route, said):
    """A spawned process whose child calls urlopen, a socket opened at import and written
    to by each item, a thread an item leaves running or joins, libc's connect through
    ctypes: each reached the canary during a replay, or was refused without failing
    anything, and the run passed. Now nothing reaches it and the run is ERROR (exit 2),
    naming the route; the model is down while it replays."""
    team.suite("beside", "beside.agent:answer", BESIDE_AGENT)
    recorded = team.cli("run", "--suite", "beside", "--record")
    assert recorded.returncode in (0, 1), recorded.stdout + recorded.stderr
    canary = Canary()
    env = team.env(endpoint=False) | {"ESCAPE": route, "CANARY_PORT": str(canary.port)}
    try:
        replayed = subprocess.run([CLI, "run", "--suite", "beside", "--replay"], cwd=team.root,
                                  env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        time.sleep(1.5)  # (what a left thread or a child would still send)
    finally:
        canary.close()
    shown = " ".join((replayed.stdout + replayed.stderr).split())
    reached = (canary.connections - (route == "early socket"), canary.received)  # (at import)
    assert (replayed.returncode, reached) == (2, (0, 0)), f"exit {replayed.returncode}, " \
        f"(connections, bytes) reached the canary: {reached}; {shown[-2000:]}"  # fmt: skip
    assert said.format(port=canary.port) in shown, shown


def test_a_recording_edited_by_hand_copied_or_older_is_refused_with_the_command(team):
    """An answer edited by hand replayed silently, and a recording copied into another
    suite's folder replayed and passed. A recording now names its suite and version and
    carries a digest of its requests; each of these is refused before anything runs
    (exit 2) with the command that records it again."""
    recorded = team.cli("run", "--suite", "weather", "--record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    path = team.root / "recordings" / "weather" / "v0.jsonl"
    original = path.read_text()
    header = json.loads(original.splitlines()[0])["recording"]
    assert (header["suite"], header["version"], header["format"]) == ("weather", "v0", 2)
    assert team.cli("run", "--suite", "weather", "--replay").returncode == 0

    path.write_text(original.replace("sunny", "rainy"))  # an answer edited by hand
    edited = team.cli("run", "--suite", "weather", "--replay")
    assert edited.returncode == 2, edited.stdout + edited.stderr
    said = " ".join(edited.stderr.split())
    assert "its requests changed after they were recorded" in said
    assert "re-record with `eval-pipeline run --suite weather --record`" in said

    team.suite("copy", "zoo_sync_nodes.agent:graph")  # the same agent, another suite
    copied = team.root / "recordings" / "copy" / "v0.jsonl"
    copied.parent.mkdir(parents=True)
    copied.write_text(original)
    other = team.cli("run", "--suite", "copy", "--replay")
    assert other.returncode == 2, other.stdout + other.stderr
    said = " ".join(other.stderr.split())
    assert "recorded for suite 'weather' v0, not for suite 'copy' v0" in said
    assert "re-record with `eval-pipeline run --suite copy --record`" in said

    path.write_text("".join(original.splitlines(keepends=True)[1:]))  # as before format 2
    older = team.cli("run", "--suite", "weather", "--replay")
    assert older.returncode == 2 and "no header line" in older.stderr, older.stderr


def test_a_recording_that_captured_no_model_call_is_refused(team):
    """A model answered without an HTTP request we see: the offline model behind ctx.model
    (no endpoint set), or a call through urllib. Nothing to replay: exit 2, never 0."""
    team.suite("offline", "offline.agent:answer", CTX_MODEL_AGENT)
    offline = team.cli("run", "--suite", "offline", "--record", endpoint=False)
    assert offline.returncode == 2, offline.stdout + offline.stderr
    assert "6 of 6 items made model calls that were not recorded (both-paris#0: 1 counted, " \
           "0 recorded" in offline.stderr  # fmt: skip
    assert "the offline model answered them" in offline.stderr
    team.suite("by_urllib", "by_urllib.agent:answer", URLLIB_AGENT)
    served = team.model.requests
    bare = team.cli("run", "--suite", "by_urllib", "--record")
    assert team.model.requests == served + 6  # the model was asked, by a client we miss
    assert bare.returncode == 2, bare.stdout + bare.stderr
    assert "nothing was recorded: 6 items ran and made no HTTP request" in bare.stderr


def test_many_threads_and_tasks_record_and_replay_every_request(tmp_path):
    """requests and httpx from eight threads and httpx's async client at once (vcrpy's
    http.client stubs lost five of sixteen such requests: its class swap is global)."""
    app = weather_api()
    api = BackgroundServer(app)
    api.start()
    url = f"http://127.0.0.1:{api.port}"
    cities = ["Paris", "Oslo", "Tokyo", "Lima"] * 4

    def ask(city: str) -> tuple[str, str]:
        weather = requests.get(f"{url}/weather", params={"city": city}, timeout=5).json()
        clock = httpx.get(f"{url}/time", params={"city": city}).json()
        return weather["forecast"], clock["time"]

    async def ask_async() -> list[str]:
        async with httpx.AsyncClient() as client:
            answers = await asyncio.gather(*(client.get(f"{url}/weather", params={"city": c})
                                             for c in cities))  # fmt: skip
        return [a.json()["forecast"] for a in answers]

    def everything() -> tuple[list, list]:
        with ThreadPoolExecutor(8) as pool:
            threaded = list(pool.map(ask, cities))
        return threaded, asyncio.run(ask_async())

    path = tmp_path / "threads.jsonl"
    try:
        belongs = Belongs("threads", "v0")
        with RecordingSession(path, "record", belongs):
            live = everything()
        sent = app.state.stats["requests"]
        with RecordingSession(path, "replay", belongs) as session:
            again = everything()
        assert again == live and session.misses == 0
        assert app.state.stats["requests"] == sent  # every answer came from the file
        header, *entries = [json.loads(line) for line in path.read_text().splitlines()]
        assert header["recording"]["requests"] == len(entries) == 8  # 4 cities × 2 routes
    finally:
        api.stop()


def test_re_recording_an_unchanged_run_writes_the_same_file(team):
    """Answers differ on every call (id, created); the file does not."""
    first = team.cli("run", "--suite", "weather", "--record")
    assert first.returncode == 0, first.stderr
    path = team.root / "recordings" / "weather" / "v0.jsonl"
    before = path.read_bytes()
    second = team.cli("run", "--suite", "weather", "--record")
    assert second.returncode == 0, second.stderr
    assert path.read_bytes() == before
    _header, *entries = [json.loads(line) for line in before.decode().splitlines()]
    assert [e["item"] for e in entries] == sorted(e["item"] for e in entries)
    assert all(e["response"]["id"].startswith("rec-") and e["response"]["created"] == 0
               for e in entries)  # fmt: skip


def test_a_request_is_keyed_by_what_it_asks_not_where_or_when():
    body = {"messages": [{"role": "system", "content": "Now: 2026-11-24T08:00:01.5+00:00"}]}
    later = {"messages": [{"role": "system", "content": "Now: 2026-11-25 09:30:00Z"}]}
    local = request_key("POST", "http://127.0.0.1:8080/v1/chat/completions", body)
    assert local == request_key("post", "https://api.openai.com/v1/chat/completions", later)
    other_day = {"messages": [{"role": "system", "content": "Orders since 2026-11-25"}]}
    assert request_key("POST", "/v1/x", other_day) != request_key(
        "POST", "/v1/x", {"messages": [{"role": "system", "content": "Orders since 2026-11-24"}]}
    )  # a bare date is content
    assert request_key("GET", "/w?a=1&b=2", None) == request_key("GET", "/w?b=2&a=1", None)


def test_an_llm_judge_is_replayed_too_never_silently_offline(tmp_path, monkeypatch):
    """A judge is built when the suite is read, from the environment: in CI (no endpoint)
    it was the offline model, judging instead of the recorded judge with no word said."""
    from eval_pipeline import evaluate
    from eval_pipeline_tests.helpers import clean_cli_env, copy_project

    project = copy_project(tmp_path)
    body = yaml.safe_load(project.read_text())
    body["suites"]["drive_thru"]["evaluators"].append(
        {"llm_judge": {"rubric": "Is the answer polite?", "model": "judge-model",
                       "name": "politeness"}}
    )  # fmt: skip
    project.write_text(yaml.safe_dump(body, sort_keys=False))
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    with LocalOpenAIServer(models=("offline", "judge-model")) as server:
        for name, value in (("EVAL_LLM_BASE_URL", server.base_url), ("EVAL_LLM_API_KEY",
                            "sk-judged-run"), ("EVAL_LLM_MODEL", "offline")):  # fmt: skip
            monkeypatch.setenv(name, value)
        recorded = evaluate("drive_thru", tier="smoke", recording="record")
        for name in ("EVAL_LLM_BASE_URL", "EVAL_LLM_API_KEY", "EVAL_LLM_MODEL"):
            monkeypatch.delenv(name)
        served = server.requests
        replayed = evaluate("drive_thru", tier="smoke", recording="replay")
        assert server.requests == served
    assert recorded.verdict == replayed.verdict == "PASS", replayed.errors
    judged = [s for s in replayed.scores if s.evaluator == "politeness"]
    assert len(judged) == 11 and {s.metadata["judge_model"] for s in judged} == {"judge-model"}
    assert replayed.summary.judge_calls == recorded.summary.judge_calls == 11
    assert replayed.summary.metrics == recorded.summary.metrics


def test_a_replays_placeholder_key_is_gone_after_it(monkeypatch):
    """A module-level ChatOpenAI() needs a key to import even when nothing is sent: a
    replay lends it one, and takes it back, so the next run in the same process (an
    evaluate() in a team's pytest) is not taken for one with a key (it went to
    api.openai.com instead of the offline model)."""
    from eval_pipeline.llm.agent_endpoint import agent_environment
    from eval_pipeline.llm.model_settings import LLMSettings

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-team")
    with agent_environment(LLMSettings(), replay=True) as lent:
        assert list(lent) == ["OPENAI_API_KEY"]
        assert os.environ["OPENAI_API_KEY"].startswith("sk-replay")
    assert "OPENAI_API_KEY" not in os.environ
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-team"  # a team's own, untouched
