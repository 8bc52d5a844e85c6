"""Incremental re-evaluation: each item's output is memoized under a key of everything
that can change it, so an unchanged suite re-runs with zero model calls.

The key of an item is a hash of:
- the suite and the agent's code version (the suite's ``agent_version``, a hash of the
  agents' source and of the data files beside the dataset: catalogue, orders, corpus),
- the prompt version and its content hash,
- the model and the parameters that change outputs (not timeouts or retry counts),
- the case id and the hash of the case's input and expected output,
- the repeat index.

Policies per run: ``reuse`` (take memoized outputs, run only the misses), ``refresh``
(run everything again and overwrite the memo; only outputs this same run already produced
before a crash are taken), ``off`` (neither read nor write the memo). Only successful
outputs are memoized: an error is always retried on the next run.
"""

from __future__ import annotations

import asyncio
import email.message
import functools
import hashlib
import importlib.metadata
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from eval_pipeline.core.store.records import ItemOutput, RunRecord
from eval_pipeline.core.suites.cases import CASE_FILE_PATTERNS, GoldenCase

CachePolicy = Literal["reuse", "refresh", "off"]
CACHE_POLICIES: tuple[str, ...] = get_args(CachePolicy)
# Recorded with a run but irrelevant to what the model answers.
PARAMS_NOT_IN_KEY = frozenset({"timeout_s", "max_retries"})
_NOT_SOURCE = ("__pycache__", ".pyc", ".pyo")


def check_policy(policy: str) -> CachePolicy:
    if policy not in CACHE_POLICIES:
        raise ValueError(
            f"unknown cache policy {policy!r} (use one of: {', '.join(CACHE_POLICIES)})"
        )
    return policy  # type: ignore[return-value]


def source_fingerprint(paths: Iterable[Path]) -> str:
    """Hash of the files under ``paths`` (names and bytes; caches and bytecode skipped)."""
    digest = hashlib.sha256()
    for root in sorted(set(paths)):
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            if any(part in str(path) for part in _NOT_SOURCE):
                continue
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


@functools.cache
def installed_fingerprint() -> str:
    """Hash of every installed distribution's name and version (importlib.metadata): the
    agent's dependencies, whatever it imports."""
    found = set()
    for dist in importlib.metadata.distributions():
        headers = _metadata_headers(dist)
        found.add(f"{(headers['Name'] or '').lower()}=={headers['Version']}")
    return hashlib.sha256("\n".join(sorted(found)).encode()).hexdigest()[:8]


def _metadata_headers(dist: importlib.metadata.Distribution) -> email.message.Message:
    """A distribution's metadata headers, the ``Name`` and ``Version`` its ``metadata``
    gives, parsed without the body after them (a README: parsing every installed package's
    took ~0.3 s of CPU in every run)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or dist.read_text("") or ""
    return email.message_from_string(text.split("\n\n", 1)[0])


def dataset_resources(dataset_dir: Path) -> list[Path]:
    """Files beside the cases that agents read (catalogue, orders, corpus): part of the key.
    Case files, thresholds and sub-directories (e.g. production traces) are not."""
    skipped = {p for pattern in CASE_FILE_PATTERNS for p in dataset_dir.glob(pattern)}
    return sorted(
        p for p in dataset_dir.iterdir()
        if p.is_file() and p not in skipped and not p.name.startswith("thresholds.")
    )  # fmt: skip


@dataclass(frozen=True)
class MemoScope:
    """The run-level parts of the key, taken from the run record."""

    suite: str
    agent_version: str
    prompt_version: str
    prompt_hash: str
    model_params: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, run: RunRecord) -> MemoScope:
        params = {k: v for k, v in run.model_params.items() if k not in PARAMS_NOT_IN_KEY}
        return cls(
            suite=run.suite,
            agent_version=run.agent_version,
            prompt_version=run.prompt_version,
            prompt_hash=run.prompt_hash,
            model_params=tuple(sorted(params.items())),
        )

    def key(self, case: GoldenCase, repeat: int) -> str:
        parts = [self.suite, self.agent_version, self.prompt_version, self.prompt_hash,
                 self.model_params, case.id, case.input_hash(), repeat]  # fmt: skip
        canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()


class MemoWriter:
    """Memoizes outputs as items complete, in batches written off the event loop, so a run
    that crashes half-way keeps what it finished (at most ``max_wait_s`` of work is lost)."""

    def __init__(
        self,
        put: Callable[[dict[str, ItemOutput]], int],
        keys: dict[tuple[str, int], str],
        *,
        batch: int = 50,
        max_wait_s: float = 1.0,
    ):
        self.put, self.keys, self.batch, self.max_wait_s = put, keys, batch, max_wait_s
        self.pending: dict[str, ItemOutput] = {}
        self.last_flush = time.monotonic()
        self.written = 0

    async def __call__(self, output: ItemOutput) -> None:
        if output.ok:
            self.pending[self.keys[output.item_id, output.repeat]] = output
        due = time.monotonic() - self.last_flush >= self.max_wait_s
        if len(self.pending) >= self.batch or (due and self.pending):
            await self.flush()

    async def flush(self) -> None:
        pending, self.pending = self.pending, {}
        self.last_flush = time.monotonic()
        if pending:
            self.written += await asyncio.to_thread(self.put, pending)
