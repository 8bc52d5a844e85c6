"""The CLI's processes in the tests, started from a warm parent: a fork server.

Most of the suite's CPU went to starting ``eval-pipeline`` processes: a CLI call spends
about 80% of its CPU importing (LangChain, LangGraph, Langfuse, pandas, SQLAlchemy,
Dagster), and the tests start several hundred. Here one process per pytest worker (the
*server*) imports all of that once; each ``subprocess.run`` of the ``eval-pipeline``
script is then a tiny stdlib-only *shim* process (``python -S -E``) that hands the server
its argv, working directory, environment and standard streams (file descriptors, over a
Unix socket); the server forks, and the fork becomes the CLI with exactly those, runs
``eval_pipeline.cli:main`` and exits as the interpreter does (non-daemon threads, atexit
handlers, streams flushed) but without tearing its modules down (``_exit_after``). The
shim forwards signals to it and exits with its exit code (or dies of its signal), so
``subprocess.run`` sees what it would have seen.

The CLI is still a process of its own with the test's argv, cwd, env and streams: what
differs is only what a fork inherits, and a call where that could matter is not routed
here but started as usual (``_needs_a_fresh_interpreter``):

- a fixed ``PYTHONHASHSEED`` (a server per seed would cost what it saves), or a call
  that would need a fifth server: the other Python start-up variables (``PYTHONWARNINGS``…),
  the locale and the terminal's (rich reads ``COLUMNS``, ``NO_COLOR``… when the report's
  console is made, at import) are served by a server started with the call's values;
- a ``PYTHONPATH`` entry that holds another ``eval_pipeline``;
- anything but ``subprocess.run`` (a test that signals or kills a ``Popen`` keeps a real
  process) and ``python -m eval_pipeline.cli`` (kept as written).

``python -m pytest`` (the pytest plugin's tests start pytest sessions in a team's project)
is served the same way: the fork runs the module as ``-m`` does, the working directory
first on ``sys.path``; so is ``python benchmarks/SCRIPT.py`` (the benchmarks' tests) or
``python scripts/SCRIPT.py``, run as ``python`` runs a script, its folder first. A shell
command (``bash -c …``: the tests that follow the docs' commands) gets a folder first on
its PATH whose ``eval-pipeline`` is a shim that decides call by call (forkserver_shim.py
``serve_on_path``); the shell's other commands see that folder on PATH, the CLI does not.
A test's workspace whose ``.venv`` is this environment (the CI workflow's steps call
``.venv/bin/eval-pipeline`` by its path) gets a ``venv_view``: its script runs that shim.

``PYTHONHASHSEED=random`` (the tests of hash-order independence: record under one seed,
replay under another) is served by two servers, each started with a random seed, in turn:
two calls in a row never share a seed. The fork re-seeds ``random`` and NumPy's global
generator, puts the new ``PYTHONPATH`` entries on ``sys.path``, and sets the default signal
handlers. ``EVAL_TEST_FORKSERVER=0``
turns the server off (every call a fresh interpreter), to check that nothing depends on it.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SCRIPT = str(Path(sys.executable).parent / "eval-pipeline")
# ``python -m`` these is served too: the pytest sessions the pytest plugin's tests start
MODULES = ("pytest",)
# and ``python SCRIPT`` of a script in these folders: the benchmarks, which their tests
# run, and scripts/ (the Dagster screenshots' scenario)
ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = (ROOT / "benchmarks", ROOT / "scripts")
SHIM = str(Path(__file__).with_name("forkserver_shim.py"))
# Imported once by the server: every command's module and what the agents the tests run
# import (a module not listed is imported by the fork, as by a fresh process).
PRELOAD = ("langgraph.prebuilt", "langgraph.graph", "langchain_openai", "dagster",
           "sqlalchemy", "pandas", "numpy")  # fmt: skip
# Read when the interpreter starts or when an imported module is first imported (rich's
# consoles in cli/report.py are made at import): a call is served by a server started
# with the same values (``_server``).
START_UP = ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TERM", "TTY_COMPATIBLE",
            "TTY_INTERACTIVE", "LANG", "LANGUAGE", "JUPYTER_COLUMNS", "JUPYTER_LINES")  # fmt: skip


def enabled() -> bool:
    return os.environ.get("EVAL_TEST_FORKSERVER", "1") != "0"


def _start_up_env(env: dict[str, str]) -> dict[str, str]:
    """What a fresh interpreter would read at start (a random hash seed is served)."""
    return {key: value for key, value in env.items()
            if key in START_UP or (key.startswith(("PYTHON", "LC_"))
            and key != "PYTHONPATH" and (key, value) != ("PYTHONHASHSEED", "random"))}  # fmt: skip


def _needs_a_fresh_interpreter(env: dict[str, str], server_env: dict[str, str]) -> bool:
    if _start_up_env(env) != _start_up_env(server_env):
        return True
    known = set(server_env.get("PYTHONPATH", "").split(os.pathsep))
    added = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in known]
    return any((Path(p) / "eval_pipeline").exists() for p in added)


def _server_env(env: dict[str, str]) -> dict[str, str]:
    """The environment a server for a call with ``env`` starts with: this process's, with
    the call's start-up variables instead of its own."""
    start_up = _start_up_env(dict(os.environ))
    return {k: v for k, v in os.environ.items() if k not in start_up} | _start_up_env(env)


# --- the test's side -------------------------------------------------------------------------
class Server:
    """The server of this pytest process: started on first use, stopped at exit."""

    def __init__(self, env: dict[str, str]) -> None:
        self.folder = tempfile.mkdtemp(prefix="eval-forkserver-")
        self.path = os.path.join(self.folder, "socket")
        self.env = env
        self.last_used = time.monotonic()
        self.serving = 0  # calls of this process it is serving now (run() is synchronous)
        self.process = subprocess.Popen(
            [sys.executable, __file__, self.path], env=self.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        while not os.path.exists(self.path):
            if self.process.poll() is not None:
                raise RuntimeError(f"the CLI fork server exited ({self.process.returncode})")
            select.select([], [], [], 0.02)

    def forked_cpu(self) -> float:
        """CPU seconds of the forks that have ended so far."""
        try:
            return float(Path(self.path + ".cpu").read_text())
        except FileNotFoundError:
            return 0.0

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)  # its forks' CPU counts in ours (RUSAGE_CHILDREN)


# Servers by the start-up variables they were started with (a call whose COLUMNS or
# PYTHONWARNINGS differ from this process's gets a server started with them), at most
# MAX_SERVERS in all (the least recently used idle ones are stopped to make room);
# PYTHONHASHSEED=random calls alternate between two of them.
MAX_SERVERS = 4
_servers: dict[tuple[tuple[str, str], ...], list[Server]] = {}
_calls = 0
_real_run = subprocess.run


def _server(env: dict[str, str]) -> Server | None:
    """The server for a call with ``env``: the first of its start-up variables', or the two
    in turn for ``PYTHONHASHSEED=random``; None when it would need one more server than
    MAX_SERVERS, or its own hash seed (a fixed PYTHONHASHSEED: a server per seed would
    cost what it saves)."""
    global _calls
    start_up = _start_up_env(env)
    if "PYTHONHASHSEED" in start_up:
        return None
    random_seed = env.get("PYTHONHASHSEED") == "random"
    _calls += random_seed
    slot = _calls % 2 if random_seed else 0
    key = tuple(sorted(start_up.items()))
    pool = _servers.setdefault(key, [])
    while len(pool) <= slot:
        if sum(map(len, _servers.values())) >= MAX_SERVERS and not _evict(key):
            return None
        pool.append(Server(_server_env(env)))
    pool[slot].last_used = time.monotonic()
    return pool[slot]


def _evict(keep: tuple[tuple[str, str], ...]) -> bool:
    """Stop the servers least recently used of a start-up environment other than ``keep``
    and not serving a call now; whether there were any."""
    idle = [(max(s.last_used for s in pool), key) for key, pool in _servers.items()
            if key != keep and pool and not any(s.serving for s in pool)]  # fmt: skip
    if not idle:
        return False
    for server in _servers.pop(min(idle)[1]):
        server.stop()
    return True


def _argv(args: Any, kwargs: dict[str, Any]) -> list[str] | None:
    """A ``subprocess.run`` call's command line, or None when it is a shell string or names
    another executable to run."""
    if not isinstance(args, list | tuple) or not args or kwargs.get("shell"):
        return None
    if kwargs.get("executable"):
        return None
    return [str(a) for a in args]


def _env_of(kwargs: dict[str, Any]) -> dict[str, str]:
    """The environment a ``subprocess.run`` call gives its process."""
    return dict(os.environ if kwargs.get("env") is None else kwargs["env"])


def _routed(args: Any, kwargs: dict[str, Any]) -> tuple[Server, list[str]] | None:
    """The server and the shim's command for a run of the CLI script, of ``python -m`` one
    of ``MODULES`` or of one of the ``SCRIPTS``, or None to run it as written."""
    words = _argv(args, kwargs)
    if words is None:
        return None
    if words[:2] == [sys.executable, "-m"] and len(words) > 2 and words[2] in MODULES:
        what, rest = f"module:{words[2]}", words[3:]
    elif words[0] == sys.executable and len(words) > 1 and Path(words[1]).parent in SCRIPTS:
        what, rest = f"path:{words[1]}", words[2:]
    elif words[0] in (SCRIPT, "eval-pipeline"):
        what, rest = "script", words[1:]
    else:
        return None
    env = _env_of(kwargs)
    if words[0] == "eval-pipeline" and not on_path_is_ours(env):
        return None
    server = _server(env)
    if server is None or _needs_a_fresh_interpreter(env, server.env):
        return None
    return server, [sys.executable, "-S", "-E", SHIM, server.path, what, *rest]


def on_path_is_ours(env: dict[str, str]) -> bool:
    import shutil

    return shutil.which("eval-pipeline", path=env.get("PATH")) == SCRIPT


SHELLS = ("bash", "sh")


def _shell_servers(args: Any, kwargs: dict[str, Any]) -> list[Server]:
    """The servers for the ``eval-pipeline`` calls of a shell command (``bash -c …``, as
    the tests that follow the docs run them): two for ``PYTHONHASHSEED=random``, in turn;
    none when the shell is not started by name, or finds our CLI neither on its PATH nor
    in the workspace it runs in (a ``venv_view``)."""
    words = _argv(args, kwargs)
    if words is None or Path(words[0]).name not in SHELLS:
        return []
    env = _env_of(kwargs)
    cwd = Path(kwargs.get("cwd") or os.getcwd()).resolve()
    in_a_view = any(v.parent.resolve() in (cwd, *cwd.parents) for v in _views if v.exists())
    if not on_path_is_ours(env) and not in_a_view:
        return []
    count = 2 if env.get("PYTHONHASHSEED") == "random" else 1
    servers = [_server(env) for _ in range(count)]
    return [s for s in servers if s is not None] if None not in servers else []


@contextlib.contextmanager
def _on_path(servers: list[Server], kwargs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``kwargs`` with a folder first on the shell's PATH whose ``eval-pipeline`` is the
    shim (forkserver_shim.py ``serve_on_path``): it decides call by call, in the shell's
    environment at that point, whether a server fits or the real script runs. The folder
    goes on the PATH only when the PATH finds our CLI; either way ``SHIM_VAR`` names the
    shim, which a ``venv_view``'s script runs."""
    with tempfile.TemporaryDirectory(prefix="eval-forkserver-path-") as folder:
        config = Path(folder) / "config.json"
        # what the shim compares a call's environment with (_needs_a_fresh_interpreter)
        fits = [_start_up_env(s.env) | {k: v for k, v in s.env.items() if k == "PYTHONPATH"}
                for s in servers]  # fmt: skip
        config.write_text(json.dumps({"script": SCRIPT, "servers": [
            {"path": s.path, "env": env} for s, env in zip(servers, fits, strict=True)]}))
        shim = Path(folder) / "eval-pipeline"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S -E "{SHIM}" --on-path '
                        f'"{config}" "$@"\n')  # fmt: skip
        shim.chmod(0o755)
        env = _env_of(kwargs)
        if on_path_is_ours(env):
            env["PATH"] = f"{folder}{os.pathsep}{env.get('PATH', '')}"
        env[SHIM_VAR] = str(shim)
        yield kwargs | {"env": env}


# A test's workspace that holds this environment as ``.venv`` (the CI workflow's steps call
# ``.venv/bin/eval-pipeline`` by its path): the folders made by ``venv_view``.
SHIM_VAR = "EVAL_TEST_FORKSERVER_SHIM"
BY_PATH_VAR = "EVAL_TEST_FORKSERVER_BY_PATH"  # (set for the shim by a view's script)
_views: list[Path] = []


def venv_view(link: Path) -> None:
    """Make ``link`` this virtual environment, as a symlink to it would (which it is with
    the server off): a folder of symlinks to its entries and its ``bin``'s, except
    ``bin/eval-pipeline``, which runs the shim a served shell command names (``SHIM_VAR``,
    ``_on_path``) and else the real script."""
    venv = Path(SCRIPT).parent.parent
    if not enabled():
        link.symlink_to(venv)
        return
    link.mkdir()
    for entry in venv.iterdir():
        if entry.name != "bin":
            (link / entry.name).symlink_to(entry)
    (link / "bin").mkdir()
    for entry in (venv / "bin").iterdir():
        if entry.name != "eval-pipeline":
            (link / "bin" / entry.name).symlink_to(entry)
    script = link / "bin" / "eval-pipeline"
    script.write_text(f'#!/bin/sh\nif [ -n "${SHIM_VAR}" ]; then\n'
                      f'  {BY_PATH_VAR}=1 exec "${SHIM_VAR}" "$@"\nfi\n'
                      f'exec "{SCRIPT}" "$@"\n')  # fmt: skip
    script.chmod(0o755)
    _views.append(link)


def run(args: Any, *more: Any, **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run``, with a run of the CLI script, or of a shell command that runs
    it, served by the fork server."""
    if more:  # (positional arguments after the command: kept as written)
        return _real_run(args, *more, **kwargs)
    routed = _routed(args, kwargs)
    servers = [routed[0]] if routed else _shell_servers(args, kwargs)
    if not servers:
        return _real_run(args, **kwargs)
    for server in servers:
        server.serving += 1
    try:
        if routed is not None:
            done = _real_run(routed[1], **kwargs)
        else:
            with _on_path(servers, kwargs) as served:
                done = _real_run(args, **served)
    finally:
        for server in servers:
            server.serving -= 1
    done.args = args
    return done


def forked_cpu() -> float:
    """CPU seconds of every CLI call served so far in this process (cpu_report.py adds it
    to each test's, as it adds a fresh process's through RUSAGE_CHILDREN)."""
    return sum(server.forked_cpu() for pool in _servers.values() for server in pool)


def install() -> None:
    if enabled():
        subprocess.run = run  # type: ignore[assignment]


def uninstall() -> None:
    subprocess.run = _real_run  # type: ignore[assignment]
    for pool in _servers.values():
        for server in pool:
            server.stop()
    _servers.clear()


# --- the server ------------------------------------------------------------------------------
HEADER = struct.Struct("!Q")
CODE = struct.Struct("!i")


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, HEADER.size, 3)
    (size,) = HEADER.unpack(data)
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the shim went away")
        body += chunk
    return json.loads(body), fds


def serve(path: str) -> tuple[dict[str, Any], list[int]] | None:
    """Accept requests until SIGTERM; in a fork, return its request (the fork then becomes
    the CLI in ``become``); in the server, return None when told to stop."""
    import importlib

    from eval_pipeline.cli import COMMANDS

    for module in (*(spec.split(":")[0] for spec, _ in COMMANDS.values()), *PRELOAD):
        importlib.import_module(module)
    # What the forks inherit is left out of their garbage collections: a collection that
    # walked it would touch, and so copy, every page of it (the usual fork-server advice)
    gc.collect()
    gc.freeze()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    listener.listen(64)
    os.rename(path + ".tmp", path)  # the test waits for the socket to exist
    running: dict[int, socket.socket] = {}  # fork's pid -> its shim's connection
    cpu = [0.0]  # the ended forks' CPU seconds
    parent = os.getppid()
    while not stopping and os.getppid() == parent:  # the pytest process may be killed
        try:
            ready, _, _ = select.select([listener, *running.values()], [], [], 0.05)
        except InterruptedError:
            continue
        for conn in ready:
            if conn is listener:
                shim, _ = listener.accept()
                request, fds = _receive(shim)
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for other in running.values():
                        other.close()
                    shim.close()
                    return request, fds
                for fd in fds:
                    os.close(fd)
                shim.sendall(HEADER.pack(pid))
                running[pid] = shim
            elif not conn.recv(1):  # the shim died (killed by a timeout): so does its fork
                for pid, shim in running.items():
                    if shim is conn:
                        _kill(pid)
        _reap(running, cpu, path)
    for pid in running:
        _kill(pid)
    while running:
        _reap(running, cpu, path)
        select.select([], [], [], 0.02)
    return None


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _reap(running: dict[int, socket.socket], cpu: list[float], path: str) -> None:
    """Tell each ended fork's shim its exit code; add its CPU (and that of the processes
    it waited for) to ``cpu`` and to the file ``forked_cpu`` reads."""
    while running:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        cpu[0] += usage.ru_utime + usage.ru_stime
        Path(path + ".cpu.tmp").write_text(repr(cpu[0]))
        os.replace(path + ".cpu.tmp", path + ".cpu")
        shim = running.pop(pid, None)
        if shim is not None:
            with contextlib.suppress(OSError):
                shim.sendall(CODE.pack(os.waitstatus_to_exitcode(status)))
            shim.close()


def become(request: dict[str, Any], fds: list[int]) -> None:
    """In the fork: take the shim's streams, directory, environment and argv, and run the
    CLI as its console script does."""
    import random

    for signum in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    known = set(sys.path)
    added = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep)
             if p and p not in known]  # fmt: skip
    sys.path[1:1] = added
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    _exit_after(lambda: _call(request))


def _call(request: dict[str, Any]) -> Any:
    """Run what the request names as its command line would: the CLI script, a script, or
    a module (``python -m``); what ``sys.exit`` would be given."""
    if request["what"] == "script":
        sys.argv = [SCRIPT, *request["argv"]]
        from eval_pipeline.cli import main

        return main()
    import runpy

    if request["what"].startswith("path:"):
        path = request["what"].removeprefix("path:")
        sys.path[0] = str(Path(path).resolve().parent)  # as ``python SCRIPT`` puts its folder
        sys.argv = [path, *request["argv"]]
        runpy.run_path(path, run_name="__main__")
        return None
    sys.path[0] = request["cwd"]  # as ``python -m`` puts the working directory first
    sys.argv = ["-m", *request["argv"]]  # (runpy puts the module's file first)
    runpy.run_module(request["what"].removeprefix("module:"), run_name="__main__",
                     alter_sys=True)  # fmt: skip
    return None


def _exit_after(call: Callable[[], Any]) -> None:
    """Run ``call`` and exit as the interpreter does (non-daemon threads joined, atexit
    handlers, the standard streams flushed; a ``sys.exit`` message printed), but without
    tearing the modules down: in a fork that costs 0.2 s of CPU a call (it touches, and so
    copies, the pages shared with the server), 85% of a served `eval-pipeline suites`.
    An exception other than SystemExit takes the interpreter's own way out."""
    import atexit
    import threading

    try:
        code = call()
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # (what Py_Finalize calls first)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit((code or 0) & 0xFF)


if __name__ == "__main__":
    sys.path[0] = str(Path(SCRIPT).parent)  # as for the console script
    served = serve(sys.argv[1])
    if served is not None:
        become(*served)
