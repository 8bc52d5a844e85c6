"""A sealed process: while a replay runs, nothing leaves it but what the run may reach.

In-process, on Linux and macOS alike (no operating-system isolation: a network namespace would
hide an attempt, the agent seeing a network error it may swallow while the run passes, and
would cut the results store, Langfuse and an HTTP agent's service off). Each route out is
closed where Python can see it, and ``sealed`` installs the guards once per process (they
cannot be removed; they do nothing while no seal is open):

- Python's audit hooks (PEP 578) see every socket connection and datagram and every new
  process, whichever module makes it — ``socket``, the C-level ``_socket``, ``asyncio``,
  ``subprocess``, ``os.system``, ``os.exec*``, ``os.posix_spawn``, ``os.fork`` — and every
  C function ``ctypes`` looks up, before it happens; an exception raised in the hook stops
  it. Refused: an IPv4 or IPv6 connection, ``sendto`` or ``sendmsg`` to any address but
  the allowed ``host:port`` pairs (Langfuse, an HTTP agent's own service: the run's own
  traffic); Unix sockets (local), the results store's driver (libpq opens its sockets in
  C, outside Python) and DNS lookups are not refused; a ctypes look-up of libc's
  ``connect``, ``send*`` or ``syscall``; any new process, unless our own code asked for
  it (``ours``: the worker processes of a ``--workers`` run). What the standard library
  runs once and caches (``platform``'s ``uname -p``, which HTTP clients such as the OpenAI
  SDK ask for in their headers) is run before the seal closes.
- ``_posixsubprocess.fork_exec``, which ``multiprocessing`` (its spawn and forkserver
  contexts, its resource tracker) calls with no audit event, is wrapped: a new process too.
- ``socket.socket``'s and ``ssl.SSLSocket``'s ``send``, ``sendall`` and ``sendfile``
  refuse data to a peer that is not allowed: a connection opened before the seal (at
  import), whose ``connect`` no hook could refuse.
- ``threading.Thread.start`` tags the thread with the item that started it (directly or
  through a thread it started): a refusal in that thread is charged to that item, and the
  agent's threads stay sealed for their life, after the run too (the threads of a pool
  that serves every item untag themselves: ``shared_thread``).

A refusal is reported to the item it belongs to (core/running/agent.py ``ItemProblem``,
kind "escaped call": an infrastructure failure, the run's verdict ERROR) and raised as
``EscapedCall``, a ``ConnectionRefusedError`` (a client sees a refused connection; a
subprocess call an ``OSError``). One that belongs to no running item (a thread left
running after its item ended, one started outside any item) is kept on the seal
(``strays``), and the caller makes the run ERROR with it. Not seen: a C extension's own
system calls (as libpq's), a ctypes function looked up before the seal opened, a write
with ``os.write`` or C-level ``_socket`` to a connection opened before it, a thread
started with ``_thread.start_new_thread`` (refused, charged to no item: the run is ERROR),
and a forkserver already running before the seal.
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import contextvars
import errno
import platform
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

from eval_pipeline.core.running.agent import ItemProblem, ItemScope, current_item

KIND = "escaped call"
_PROCESS_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                   "os.fork", "os.forkpty"}  # fmt: skip
_SOCKET_EVENTS = {"socket.connect", "socket.sendto", "socket.sendmsg"}
_WATCHED = _PROCESS_EVENTS | _SOCKET_EVENTS | {"ctypes.dlsym"}
_INTERNET = (socket.AF_INET, socket.AF_INET6)
# libc's functions that reach a peer, as ctypes looks them up (``__connect`` and
# ``__libc_connect`` are ``connect`` too); ``syscall`` can be any of them.
_C_NETWORK = {"connect", "send", "sendto", "sendmsg", "sendmmsg", "syscall"}
_TAG = "_eval_sealed"  # the attribute a thread started under a seal carries (``_Started``)


class EscapedCall(ConnectionRefusedError):
    """A call a sealed run refused: it would have left the process."""

    fault = "infrastructure"


@dataclass
class Seal:
    """An open seal: what it allows, what to do instead (the advice every refusal gives)
    and the refusals no running item was charged with."""

    allowed: set[tuple[str, int]]
    advice: str
    strays: list[str] = field(default_factory=list)  # refusals that belong to no running item


@dataclass(frozen=True)
class _Started:
    """What a thread started while a seal was open carries: the seal, the item that started
    it (None: our own code outside items), and whether our own code asked for it (``ours``)."""

    seal: Seal
    item: ItemScope | None
    ours: bool


_open: Seal | None = None
_ours: contextvars.ContextVar[bool] = contextvars.ContextVar("eval_ours", default=False)
_installed = False
_install_lock = threading.Lock()


def _started() -> _Started | None:
    return getattr(threading.current_thread(), _TAG, None)


def _sealing() -> Seal | None:
    """The seal that holds in this thread now: the open one, or, after it closed, the one
    an agent's thread was started under; None for our own code."""
    started = _started()
    if _ours.get() or (started is not None and started.ours):
        return None
    if _open is not None:
        return _open
    return started.seal if started is not None and started.item is not None else None


def _refuse(what: str, seal: Seal) -> NoReturn:
    scope, started = current_item.get(), _started()
    if scope is None and started is not None and started.item is not None:
        scope, what = started.item, f"{what} from a thread the agent started"
    message = (f"replay: {what} was refused: the agent reached outside the process during a "
               f"replay, where only the recordings answer; {seal.advice}")  # fmt: skip
    if scope is None:
        seal.strays.append(f"{message} (outside any item)")
    elif not scope.report(ItemProblem(KIND, message)):
        seal.strays.append(f"{message} (after its item, {scope.case_id}#{scope.repeat}, ended)")
    raise EscapedCall(errno.ECONNREFUSED, message)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in _WATCHED:
        return
    seal = _sealing()
    if seal is None:
        return
    if event in _SOCKET_EVENTS:
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) not in _INTERNET or not isinstance(address, tuple):
            return
        host, port = str(address[0]), int(address[1])
        if (host, port) not in seal.allowed:
            how = "a datagram" if event != "socket.connect" else "a connection"
            _refuse(f"{how} to {host}:{port}", seal)
    elif event == "ctypes.dlsym":
        name = args[1] if isinstance(args[1], str) else ""
        if name.lstrip("_").removeprefix("libc_") in _C_NETWORK:
            _refuse(f"a C call to {name.lstrip('_').removeprefix('libc_')}() through ctypes",
                    seal)  # fmt: skip
    else:
        _refuse(f"a new process ({event}: {_program(args[0] if args else '')})", seal)


def _program(program: Any) -> str:
    if isinstance(program, bytes):
        program = program.decode(errors="replace")
    return str(program)[:60] or "…"


def _fork_exec(original: Callable[..., int]) -> Callable[..., int]:
    """``_posixsubprocess.fork_exec``, refused while sealed: what ``multiprocessing`` starts
    its processes with, no audit event raised (``subprocess`` raised one before)."""

    def fork_exec(*args: Any, **kwargs: Any) -> int:
        seal = _sealing()
        if seal is not None:
            caller = sys._getframe(1).f_globals.get("__name__", "?")
            argv = args[0] if args and args[0] else [""]
            _refuse(f"a new process ({caller}: {_program(argv[0])})", seal)
        return original(*args, **kwargs)

    return fork_exec


def _guarded_send(original: Callable[..., Any]) -> Callable[..., Any]:
    """A socket's send method, refusing data to a peer the seal does not allow: a
    connection opened before the seal (its ``connect`` was never refused)."""

    def send(sock: socket.socket, *args: Any, **kwargs: Any) -> Any:
        seal = _sealing()
        if seal is not None and sock.family in _INTERNET:
            try:
                peer = sock.getpeername()
            except OSError:  # not connected: the send fails on its own
                peer = None
            if peer is not None and (str(peer[0]), int(peer[1])) not in seal.allowed:
                _refuse(f"data on a connection to {peer[0]}:{peer[1]} opened before the "
                        f"replay", seal)  # fmt: skip
        return original(sock, *args, **kwargs)

    return send


def _thread_start(original: Callable[[threading.Thread], None]) -> Callable[..., None]:
    """``Thread.start``, tagging the thread while sealed (``_Started``): the item that
    started it, directly or through the thread starting it, and whether it is ours."""

    def start(thread: threading.Thread) -> None:
        parent = _started()
        seal = _open or (parent.seal if parent is not None and parent.item is not None else None)
        if seal is not None:
            item = current_item.get() or (parent.item if parent is not None else None)
            ours = _ours.get() or (parent is not None and parent.ours)
            setattr(thread, _TAG, _Started(seal, item, ours))
        original(thread)

    return start


def _install() -> None:
    global _installed
    import ssl  # (here: importing this module stays cheap)

    with _install_lock:
        if not _installed:
            sys.addaudithook(_hook)
            _posixsubprocess.fork_exec = _fork_exec(_posixsubprocess.fork_exec)
            for cls in (socket.socket, ssl.SSLSocket):
                for name in ("send", "sendall", "sendfile"):
                    setattr(cls, name, _guarded_send(getattr(cls, name)))
            threading.Thread.start = _thread_start(threading.Thread.start)  # type: ignore[method-assign]
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
def sealed(allowed: Iterable[tuple[str, int]], advice: str) -> Iterator[Seal]:
    """Refuse what would leave the process (module docstring) until the block ends; the
    seal's ``strays`` are the refusals no running item was charged with."""
    global _open
    _install()
    platform.processor()  # (computed once, lazily, by running `uname -p`: now, not sealed)
    if _open is not None:
        raise RuntimeError("a seal is already open in this process")
    _open = Seal(addresses(allowed), advice)
    try:
        yield _open
    finally:
        _open = None


@contextlib.contextmanager
def ours() -> Iterator[None]:
    """Our own code's processes and connections (a ``--workers`` run's worker processes):
    not refused by an open seal, in this thread, the threads it starts and what they start
    with its context."""
    token = _ours.set(True)
    try:
        yield
    finally:
        _ours.reset(token)


def shared_thread() -> None:
    """A pool thread's initializer (the evaluation loop's executor): the thread serves
    every item, so it is charged to none, and outlives no seal (its work carries its
    item in its context)."""
    with contextlib.suppress(AttributeError):
        delattr(threading.current_thread(), _TAG)
