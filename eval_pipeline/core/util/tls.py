"""One TLS context per process for our own HTTP clients.

httpx builds a fresh ``ssl.SSLContext`` for every client it creates, reading the whole CA
bundle each time (about 50 ms of CPU, even for a plain-http URL); a run opens several
clients (score batches, health checks, an HTTP agent). The context is built once, the way
httpx builds its default (certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set), and
shared: an SSLContext is safe to share between clients and threads."""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def shared_context() -> ssl.SSLContext:
    """The verifying context httpx would build by default, built once."""
    return httpx.create_ssl_context()
