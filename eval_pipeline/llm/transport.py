"""The model client's HTTP connections: httpx's, with a cheaper idle-connection probe.

Before every request and after every response, httpcore's connection pool asks each idle
pooled connection whether its socket is readable (a server that closed it). Its anyio
stream answers by rebuilding anyio's whole socket-attribute table, a ``getpeername``
system call included, to reach the raw socket: ~50 µs per idle connection, so at 64 items
in flight ~0.6 ms of CPU per model call, 11% of all of it (BENCHMARKS.md, 2026-11-24).
The streams here keep the raw socket from the start; every answer is the same.
"""

from __future__ import annotations

import socket
from typing import Any

import httpcore2
from httpcore2._backends.auto import AutoBackend
from httpcore2._utils import is_socket_readable


class _Stream(httpcore2.AsyncNetworkStream):
    def __init__(self, inner: httpcore2.AsyncNetworkStream):
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return _Stream(await self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return is_socket_readable(self._socket)
        return self._inner.get_extra_info(info)


class SocketKeepingBackend(httpcore2.AsyncNetworkBackend):
    """httpcore's default backend, its streams wrapped in ``_Stream``."""

    def __init__(self) -> None:
        self._inner = AutoBackend()

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return _Stream(await self._inner.connect_tcp(*args, **kwargs))

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return _Stream(await self._inner.connect_unix_socket(*args, **kwargs))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def keep_sockets(transport: Any) -> None:
    """Put an httpx transport's connection pool on SocketKeepingBackend. httpx takes no
    backend argument, so the pool's attribute is set; anything else (a proxy's transport, a
    release that renames it) is left as httpx made it: correct, only slower."""
    pool = getattr(transport, "_pool", None)
    if isinstance(getattr(pool, "_network_backend", None), AutoBackend):
        pool._network_backend = SocketKeepingBackend()  # type: ignore[union-attr]
