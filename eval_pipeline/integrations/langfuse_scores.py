"""Write evaluation scores back to Langfuse, so they show on the traces people look at.

Scores go out synchronously through the public API in batches, with deterministic ids
(Langfuse upserts by id: re-sending is harmless). Whatever cannot be delivered is put in
the results store's outbox and sent first by the next write-back. Writing back never
raises: an evaluation's result does not depend on Langfuse being up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from langfuse import Langfuse
from langfuse.api.core.api_error import ApiError
from langfuse.api.scores.types.create_score_batch_results import CreateScoreBatchResults
from langfuse.api.scores.types.create_score_request import CreateScoreRequest

from eval_pipeline.core.redact import redact
from eval_pipeline.core.store.records import ItemOutput, ItemScore
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.integrations.langfuse_client import describe_error
from eval_pipeline.integrations.langfuse_tracing import item_trace_id

OUTBOX_KIND = "langfuse_score"
BATCH = 500


@dataclass(frozen=True)
class WritebackReport:
    sent: int
    retried_from_outbox: int
    queued: int
    error: str | None = None

    def metadata(self) -> dict[str, Any]:
        return {
            "langfuse_scores_sent": self.sent,
            "langfuse_scores_retried": self.retried_from_outbox,
            "langfuse_scores_queued": self.queued,
            "langfuse_writeback_error": self.error or "none",
        }


def score_id(*parts: object) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:32]


def item_score_payloads(
    run_id: str, scores: Iterable[ItemScore], outputs: Iterable[ItemOutput] = ()
) -> dict[str, dict[str, Any]]:
    """One NUMERIC score per evaluator on each item's trace (evaluator errors are skipped).

    An output reused from the memo was traced by the run that produced it: its score goes
    on that trace (this run made none), with ``reused_from`` in the score's metadata.
    """
    producer = {(o.item_id, o.repeat): o.source_run_id for o in outputs if o.source_run_id}
    payloads = {}
    for s in scores:
        if s.value is None:
            continue
        key = score_id(run_id, s.item_id, s.repeat, s.evaluator)
        traced_by = producer.get((s.item_id, s.repeat), run_id)
        metadata = {"run_id": run_id, "item_id": s.item_id, "repeat": s.repeat}
        if traced_by != run_id:
            metadata["reused_from"] = traced_by
        payloads[key] = {
            "id": key,
            "traceId": item_trace_id(traced_by, s.item_id, s.repeat),
            "name": s.evaluator,
            "value": float(s.value),
            "comment": s.comment,
            "dataType": "NUMERIC",
            "metadata": metadata,
        }
    return payloads


def trace_score_payloads(scores: Iterable[ItemScore]) -> dict[str, dict[str, Any]]:
    """Reference-free scores of production traces, on those traces (item id = trace id)."""
    payloads = {}
    for s in scores:
        if s.value is None:
            continue
        key = score_id("production", s.item_id, s.evaluator)
        payloads[key] = {
            "id": key,
            "traceId": s.item_id,
            "name": f"eval_{s.evaluator}",
            "value": float(s.value),
            "comment": s.comment,
            "dataType": "NUMERIC",
        }
    return payloads


def run_score_payloads(run_id: str, metrics: dict[str, float | None]) -> dict[str, dict[str, Any]]:
    """Run-level means as session scores (each item trace's session is the run)."""
    payloads = {}
    for name, value in metrics.items():
        if value is None:
            continue
        key = score_id(run_id, "run", name)
        payloads[key] = {
            "id": key,
            "sessionId": run_id,
            "name": f"run_{name}",
            "value": float(value),
            "dataType": "NUMERIC",
            "metadata": {"run_id": run_id},
        }
    return payloads


def write_back(
    client: Langfuse, store: ResultsStore, payloads: dict[str, dict[str, Any]]
) -> WritebackReport:
    """Send the outbox's backlog, then ``payloads``; queue whatever does not get through."""
    backlog = store.queued(OUTBOX_KIND)
    pending = {**backlog, **payloads}
    delivered: list[str] = []
    error = None
    keys = list(pending)
    for start in range(0, len(keys), BATCH):
        batch = keys[start : start + BATCH]
        try:
            rejected = _send(client, [pending[k] for k in batch])
        except (ApiError, httpx.HTTPError, ValueError) as exc:
            error = redact(describe_error(exc))
            break
        if rejected:
            error = redact(f"Langfuse rejected {len(rejected)} score(s): {rejected[0]}")
        delivered.extend(batch)  # rejected scores are invalid: re-sending cannot help
    store.delivered(k for k in delivered if k in backlog)
    undelivered = {k: v for k, v in pending.items() if k not in set(delivered)}
    store.queue(OUTBOX_KIND, undelivered, error or "")
    return WritebackReport(
        sent=len(delivered),
        retried_from_outbox=len(backlog),
        queued=len(undelivered),
        error=error,
    )


def _send(client: Langfuse, batch: Sequence[dict[str, Any]]) -> list[str]:
    request = [CreateScoreRequest.model_validate(p) for p in batch]
    response = client.api.scores.create(
        request=request, request_options={"timeout_in_seconds": 10, "max_retries": 1}
    )
    if isinstance(response, CreateScoreBatchResults) and response.rejected:
        return [str(e) for e in response.errors] or ["(no detail)"]
    return []
