"""Reproducible sampling of a stream of traces, by hash of the trace id.

A trace is kept when ``u = hash(salt, trace id)`` (uniform in [0, 1)) is below ``rate``;
with a ``cap``, the ``cap`` kept traces with the smallest ``u`` are the sample (a bottom-k
sketch: O(cap) memory, whatever the stream length). With ``stratify_by`` (a dotted path
such as ``metadata.category``) the cap applies per stratum: each stratum gets
``max(1, round(cap × its share of the kept traces))`` slots. The result depends only on
the traces and the settings, not on their order: the same day and settings always give
the same sample.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from eval_pipeline.core.traces.observations import TraceRecord


@dataclass(frozen=True)
class SamplingConfig:
    rate: float = 1.0
    cap: int | None = None
    stratify_by: str | None = None
    salt: str = ""

    def __post_init__(self) -> None:
        if not 0.0 < self.rate <= 1.0:
            raise ValueError(f"sampling rate must be in (0, 1], got {self.rate}")
        if self.cap is not None and self.cap < 1:
            raise ValueError(f"sampling cap must be ≥ 1, got {self.cap}")


def unit_hash(salt: str, trace_id: str) -> float:
    digest = hashlib.blake2b(f"{salt}:{trace_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def sample(records: Iterable[TraceRecord], config: SamplingConfig) -> list[TraceRecord]:
    """The sample, ordered by hash (stable across runs and input orders)."""
    if config.cap is None:
        hashed = ((unit_hash(config.salt, r.trace_id), r.trace_id, r) for r in records)
        kept = [entry for entry in hashed if entry[0] < config.rate]
        return [r for _, _, r in sorted(kept, key=lambda x: x[:2])]
    # Per stratum, the `cap` smallest hashes (max-heap via negated keys); counts for shares.
    heaps: dict[str, list[tuple[float, str, int, TraceRecord]]] = {}
    seen: Counter[str] = Counter()
    for n, record in enumerate(records):
        u = unit_hash(config.salt, record.trace_id)
        if u >= config.rate:
            continue
        stratum = _stratum(record, config.stratify_by)
        seen[stratum] += 1
        heap = heaps.setdefault(stratum, [])
        entry = (-u, record.trace_id, n, record)
        if len(heap) < config.cap:
            heapq.heappush(heap, entry)
        elif entry[:2] > heap[0][:2]:
            heapq.heapreplace(heap, entry)
    total = sum(seen.values())
    chosen: list[tuple[float, str, TraceRecord]] = []
    for stratum, heap in heaps.items():
        slots = config.cap
        if config.stratify_by:
            slots = max(1, round(config.cap * seen[stratum] / total))
        smallest = sorted((-neg_u, tid, r) for neg_u, tid, _, r in heap)[:slots]
        chosen.extend(smallest)
    return [r for _, _, r in sorted(chosen, key=lambda x: x[:2])]


def _stratum(record: TraceRecord, path: str | None) -> str:
    if not path:
        return ""
    value = record.lookup(path)
    return "(missing)" if value is None else str(value)
