"""The process ``subprocess.run`` starts for a CLI call served by the fork server
(forkserver.py): ``python -S -E forkserver_shim.py SOCKET WHAT ARG...``. Hands the server this
process's argv, working directory, environment and standard streams; forwards SIGINT,
SIGTERM and SIGHUP to the fork that runs the CLI; exits with its exit code, or of its
signal. Standard library only, started without site-packages (a few milliseconds)."""

import contextlib
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
    path, what, *argv = sys.argv[1:]  # what: "script", or "module:NAME" for python -m NAME
    body = json.dumps({"what": what, "argv": argv, "cwd": os.getcwd(),
                       "env": dict(os.environ)}).encode()  # fmt: skip
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
