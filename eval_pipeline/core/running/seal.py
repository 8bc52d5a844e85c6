"""A sealed process: while a replay runs, nothing leaves it but what the run may reach.

Python's audit hooks (PEP 578) see every socket connection and datagram and every new
process, whichever module makes it — ``socket``, the C-level ``_socket``, ``asyncio``,
``subprocess``, ``os.system``, ``os.exec*``, ``os.posix_spawn``, ``os.fork`` — before it
happens, and an exception raised in the hook stops it. ``sealed`` installs one hook per
process (hooks cannot be removed; it does nothing while no seal is open) and refuses:

- an IPv4 or IPv6 connection, ``sendto`` or ``sendmsg`` to any address but the allowed
  ``host:port`` pairs (Langfuse, an HTTP agent's own service: the run's own traffic);
  Unix sockets (local), the results store's driver (libpq opens its sockets in C, outside
  Python) and DNS lookups are not refused;
- any new process, unless our own code asked for it (``ours``: the worker processes of a
  ``--workers`` run). What the standard library runs once and caches (``platform``'s
  ``uname -p``, which HTTP clients such as the OpenAI SDK ask for in their headers) is run
  before the seal closes.

A refusal is reported to the item running (core/running/agent.py ``ItemProblem``, kind
"escaped call": an infrastructure failure, the run's verdict ERROR) and raised as
``EscapedCall``, a ``ConnectionRefusedError`` (a client sees a refused connection; a
subprocess call an ``OSError``). Not seen: threads started with ``threading.Thread`` by the
agent's own code report their refusal to no item (the refusal still happens), and a C
extension that makes its own system calls (as libpq does) is beyond any Python hook.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import platform
import socket
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from eval_pipeline.core.running.agent import ItemProblem, current_item

KIND = "escaped call"
_PROCESS_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                   "os.fork", "os.forkpty"}  # fmt: skip
_SOCKET_EVENTS = {"socket.connect", "socket.sendto", "socket.sendmsg"}
_INTERNET = (socket.AF_INET, socket.AF_INET6)


class EscapedCall(ConnectionRefusedError):
    """A call a sealed run refused: it would have left the process."""

    fault = "infrastructure"


class _Seal:
    def __init__(self, allowed: set[tuple[str, int]], advice: str) -> None:
        self.allowed, self.advice = allowed, advice


_open: _Seal | None = None
_ours: contextvars.ContextVar[bool] = contextvars.ContextVar("eval_ours", default=False)
_installed = False
_install_lock = threading.Lock()


def _refuse(what: str, advice: str) -> None:
    message = (f"replay: {what} was refused: the agent reached outside the process during a "
               f"replay, where only the recordings answer; {advice}")  # fmt: skip
    scope = current_item.get()
    if scope is not None:
        scope.report(ItemProblem(KIND, message))
    raise EscapedCall(errno.ECONNREFUSED, message)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    seal = _open
    if seal is None or _ours.get():
        return
    if event in _SOCKET_EVENTS:
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) not in _INTERNET or not isinstance(address, tuple):
            return
        host, port = str(address[0]), int(address[1])
        if (host, port) not in seal.allowed:
            how = "a datagram" if event != "socket.connect" else "a connection"
            _refuse(f"{how} to {host}:{port}", seal.advice)
    elif event in _PROCESS_EVENTS:
        program = args[0] if args else ""
        if isinstance(program, bytes):
            program = program.decode(errors="replace")
        _refuse(f"a new process ({event}: {str(program)[:60] or '…'})", seal.advice)


def _install() -> None:
    global _installed
    with _install_lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True


def addresses(hosts: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
    """Each (host, port) as the addresses a socket connects to (resolved once, now)."""
    found: set[tuple[str, int]] = set()
    for host, port in hosts:
        found.add((host, port))
        with contextlib.suppress(OSError):
            found |= {(str(info[4][0]), port) for info in socket.getaddrinfo(host, port)}
    return found


@contextlib.contextmanager
def sealed(allowed: Iterable[tuple[str, int]], advice: str) -> Iterator[None]:
    """Refuse what would leave the process (module docstring) until the block ends."""
    global _open
    _install()
    platform.processor()  # (computed once, lazily, by running `uname -p`: now, not sealed)
    if _open is not None:
        raise RuntimeError("a seal is already open in this process")
    _open = _Seal(addresses(allowed), advice)
    try:
        yield
    finally:
        _open = None


@contextlib.contextmanager
def ours() -> Iterator[None]:
    """Our own code's processes and connections (a ``--workers`` run's worker processes):
    not refused by an open seal, in this thread and what it starts with its context."""
    token = _ours.set(True)
    try:
        yield
    finally:
        _ours.reset(token)
