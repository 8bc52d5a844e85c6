"""The process ``subprocess.run`` starts for a CLI call served by the fork server
(forkserver.py): ``python -S -E forkserver_shim.py SOCKET WHAT ARG...``. Hands the server this
process's argv, working directory, environment and standard streams; forwards SIGINT,
SIGTERM and SIGHUP to the fork that runs the CLI; exits with its exit code, or of its
signal. Standard library only, started without site-packages (a few milliseconds).

``forkserver_shim.py --on-path CONFIG ARG...`` is the ``eval-pipeline`` a shell command of
a test finds first on its PATH (forkserver.py ``_on_path``), or that the script of a
``venv_view`` runs when the shell calls it by path: it serves the call as above
when the shell's environment at that point still fits a server (CONFIG names them, two in
turn for ``PYTHONHASHSEED=random``), else it becomes the real CLI script, as the shell
would have started it. Either way the CLI sees the PATH without the shim's folder."""

import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import sys

HEADER = struct.Struct("!Q")
CODE = struct.Struct("!i")


def _exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            sys.exit("eval-pipeline (fork server): the server went away")
        data += chunk
    return data


def main() -> None:
    if sys.argv[1] == "--on-path":
        config_path, *argv = sys.argv[2:]
        serve_on_path(config_path, argv)
    path, what, *argv = sys.argv[1:]  # what: "script", or "module:NAME" for python -m NAME
    call(path, what, argv, dict(os.environ))


def serve_on_path(config_path: str, argv: list[str]) -> None:
    """Serve a shell's ``eval-pipeline ARG...`` by a server its environment fits, else
    exec the real script (does not return)."""
    with open(config_path) as file:
        config = json.load(file)
    folder = os.path.dirname(config_path)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p != folder)  # fmt: skip
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import forkserver  # (stdlib only: the rules a call is served by)

    env.pop(forkserver.SHIM_VAR, None)
    by_path = env.pop(forkserver.BY_PATH_VAR, None) == "1"  # a venv_view's script, by path

    servers = config["servers"]
    seed = env.get("PYTHONHASHSEED")
    if seed == "random" and len(servers) == 2:
        with open(os.path.join(folder, "calls"), "a+") as calls:  # two in a row: two seeds
            fcntl.flock(calls, fcntl.LOCK_EX)
            calls.seek(0)
            count = len(calls.read())
            calls.write(".")
        server = servers[count % 2]
    else:
        server = servers[0]
    # (a seed the shell fixed, or chose at random with one server: a fresh interpreter)
    fits = ((seed is None or (seed == "random" and len(servers) == 2))
            and (by_path or forkserver.on_path_is_ours(env))
            and not forkserver._needs_a_fresh_interpreter(env, server["env"]))  # fmt: skip
    if not fits:
        os.execve(config["script"], [config["script"], *argv], env)
    call(server["path"], "script", argv, env)


def call(path: str, what: str, argv: list[str], env: dict[str, str]) -> None:
    body = json.dumps({"what": what, "argv": argv, "cwd": os.getcwd(), "env": env}).encode()
    for fd in (0, 1, 2):  # a stream the caller closed is the null device, as for a CLI
        try:
            os.fstat(fd)
        except OSError:
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    socket.send_fds(conn, [HEADER.pack(len(body))], [0, 1, 2])
    conn.sendall(body)
    (pid,) = HEADER.unpack(_exactly(conn, HEADER.size))

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    (code,) = CODE.unpack(_exactly(conn, CODE.size))
    if code < 0:  # the CLI died of a signal: so does this process
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main()
