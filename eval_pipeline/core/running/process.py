"""Whether the process that drives a run is still alive, from anywhere on its machine.

A run records its owner (``this_process``): host, pid and the process's start time (Linux:
``/proc/<pid>/stat``'s start tick, so a pid used again by another process is not mistaken
for it). ``ended`` answers for an owner on this host; on another host it cannot know, and
says no. The worker processes of a ``--workers`` run end with their parent
(``end_with_parent``): on Linux the kernel signals them (``PR_SET_PDEATHSIG``), elsewhere
a watcher thread sees the parent gone within a second.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path


def _start_tick(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # (the name may hold spaces and parentheses)
    return int(fields[19])


def this_process() -> str:
    """``host:pid:start`` of the calling process."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_tick(os.getpid()) or 0}"


def ended(owner: str) -> bool:
    """The process ``owner`` names has ended (only knowable on its own host)."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname():
        return False
    try:
        pid, start = int(parts[1]), int(parts[2])
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    now = _start_tick(pid)
    return bool(start and now is not None and now != start)  # the pid is another process's


def end_with_parent(parent: int) -> None:
    """Make this (worker) process end when the process ``parent`` does (the one that
    started the run: with a fork server between them, not this process's own parent):
    SIGTERM from the kernel on Linux when this process's parent ends (a fork server ends
    with the process that started it), and a watcher thread everywhere (it also covers a
    ``parent`` that died before the first was set)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    def alive() -> bool:
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # (someone else's process: the pid was reused)
            return False
        return True

    def watch() -> None:
        while alive():
            time.sleep(1.0)
        os._exit(1)

    if not alive():
        os._exit(1)
    threading.Thread(target=watch, name="eval-parent-watch", daemon=True).start()
