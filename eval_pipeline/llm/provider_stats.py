"""What the model provider answered, counted at the HTTP layer of every model we build.

The OpenAI SDK retries 429s, 5xx and dropped connections by itself (``max_retries``), so
item-level attempts alone understate how much retrying went on: these counters see every
request and every response status. They are per process (one run worker per run under the
daemon and on Kubernetes); take a ``snapshot()`` before and after a run.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any


class ProviderStats:
    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def count(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self._counts)

    def hooks(self) -> dict[str, list[Any]]:
        """httpx event hooks: one count per request sent and per response status."""

        async def on_request(request: Any) -> None:
            self.count("requests")

        async def on_response(response: Any) -> None:
            self.count(f"status_{response.status_code}")

        return {"request": [on_request], "response": [on_response]}


def describe(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    """The counts of one run: requests, responses by status, and requests that got no
    response at all (timeouts, refused or reset connections)."""
    delta = after - before
    statuses = {k: v for k, v in delta.items() if k.startswith("status_")}
    answered = sum(statuses.values())
    return {
        "requests": delta["requests"],
        **dict(sorted(statuses.items())),
        "no_response": max(0, delta["requests"] - answered),
        # each was retried unless its error was permanent; a reset mid-body counts as a 200
        "failed_requests": max(0, delta["requests"] - statuses.get("status_200", 0)),
    }


PROVIDER_STATS = ProviderStats()
