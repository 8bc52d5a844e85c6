"""Write evaluation scores back to Langfuse, so they show on the traces people look at.

Scores go out as ``score-create`` events through ``POST /api/public/ingestion``, the batch
endpoint that self-hosted v3 and v4 both serve (their ``POST /scores`` takes one score
per request; SDK 5 sends it lists, which they refuse). Batches are capped by bytes, well
under the server's body limit; a batch the server still finds too large (413) is split.
Score ids are deterministic and Langfuse upserts by id: re-sending is harmless.

Nothing here raises, and nothing blocks the outbox:
- a batch that cannot be delivered now (server down, 5xx, 429) waits in the results
  store's outbox and is sent first by the next write-back;
- a score the server refuses (its 207 names it with a 4xx) or that can never be sent (too
  large, not finite) is set aside in the outbox under ``SET_ASIDE_KIND`` with the reason,
  never retried, and counted in the report; the rest are delivered;
- a score still undelivered after MAX_ATTEMPTS write-backs (refused keys: 401/403, an
  ingestion suspended, a server that stays down) is set aside too, with its last error.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from eval_pipeline.core.scoring.summary import RunEvaluation
from eval_pipeline.core.store.records import ItemOutput, ItemScore
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.util.redact import redact
from eval_pipeline.integrations.langfuse_client import (
    LangfuseSettings,
    describe_error,
    describe_status,
    item_root_span_id,
    item_trace_id,
)
from eval_pipeline.integrations.langfuse_experiments import Linked, RunVerdict

OUTBOX_KIND = "langfuse_score"
SET_ASIDE_KIND = "langfuse_score_set_aside"
BATCH_BYTES = 1_000_000  # as SDK 5 caps its own batches; the ingestion limit is 4.5 MB
MAX_COMMENT_CHARS = 4_000  # a judge's reasoning can be long; Langfuse shows it as the comment
TIMEOUT_S = 15
MAX_WAIT_S = 30  # a longer Retry-After: the scores wait in the outbox for the next run
# A score that waited this many write-backs (each run, each sensor tick) is set aside, kept
# with its last error, never sent again: keys Langfuse refuses (401/403) or a server that
# stays down must not grow the outbox and retry it forever. `doctor` lists what is there.
MAX_ATTEMPTS = 20


def retry_after(response: httpx.Response) -> float | None:
    """Seconds a 429 asks to wait (Retry-After in seconds, as Langfuse's RateLimitService
    sends it); None when it does not say."""
    try:
        return max(0.0, float(response.headers["retry-after"]))
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True)
class WritebackReport:
    sent: int
    retried_from_outbox: int
    queued: int
    set_aside: int = 0
    error: str | None = None
    set_aside_reasons: tuple[str, ...] = ()
    experiment: Linked | None = None  # the run's experiment in Langfuse, or why it has none

    def metadata(self) -> dict[str, Any]:
        return {
            **({"langfuse_experiment": self.experiment.line()} if self.experiment else {}),
            "langfuse_scores_sent": self.sent,
            "langfuse_scores_retried": self.retried_from_outbox,
            "langfuse_scores_queued": self.queued,
            "langfuse_scores_set_aside": self.set_aside,
            "langfuse_writeback_error": self.error or "none",
        }

    def line(self) -> str:
        """One line for a terminal report: what was sent, and where the run's experiment
        is."""
        parts = [f"{self.sent} score(s) sent to Langfuse"]
        if self.experiment is not None:
            parts.append(self.experiment.line())
        if self.queued:
            parts.append(f"{self.queued} queued for the next run ({self.error})")
        if self.set_aside:
            parts.append(f"{self.set_aside} set aside as undeliverable "
                         f"({'; '.join(self.set_aside_reasons)})")  # fmt: skip
        return ", ".join(parts)


def score_id(*parts: object) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:32]


def item_score_payloads(
    run_id: str, scores: Iterable[ItemScore], outputs: Iterable[ItemOutput] = (),
    *, own_traces: bool = False, environment: str | None = None,
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """One score per evaluator on each item's trace, of its declared type (evaluator errors
    are skipped), in the traces' ``environment`` (Langfuse puts a score without one in
    ``default``: the evaluation's scores showed in the production views).

    An output reused from the memo was traced by the run that produced it: its score goes
    on that trace, with ``reused_from`` in the score's metadata; with ``own_traces`` (v4:
    this run traced it too, langfuse_tracing.TracedAgent.reused) on this run's, and on the
    item's root observation there, where the experiment views read item scores (a
    trace-level score is in a column group they hide by default).
    """
    producer = {(o.item_id, o.repeat): o.source_run_id for o in outputs if o.source_run_id}
    payloads = {}
    for s in scores:
        if s.value is None:
            continue
        key = score_id(run_id, s.item_id, s.repeat, s.evaluator)
        produced_by = producer.get((s.item_id, s.repeat), run_id)
        traced_by = run_id if own_traces else produced_by
        metadata = {
            **(s.metadata or {}),
            "run_id": run_id,
            "item_id": s.item_id,
            "repeat": s.repeat,
        }  # (the judge's model and prompt hash, when one scored)
        if produced_by != run_id:
            metadata["reused_from"] = produced_by
        payloads[key] = {
            "id": key,
            "traceId": item_trace_id(traced_by, s.item_id, s.repeat),
            **(
                {"observationId": item_root_span_id(run_id, s.item_id, s.repeat)}
                if own_traces
                else {}
            ),
            **({"environment": environment} if environment else {}),
            "name": s.evaluator,
            "value": sent_value(s),
            "comment": _comment(s.comment),
            "dataType": s.data_type,  # BOOLEAN: 0 or 1, as Langfuse's ScoreBody takes it
            "metadata": metadata,
        }
    return payloads


def sent_value(score: ItemScore) -> float | str:
    """What Langfuse's ScoreBody takes as the value: a CATEGORICAL score's category (its
    number is the suite's scale, ours alone), else the number (BOOLEAN: 0 or 1)."""
    if score.data_type == "CATEGORICAL" and score.category is not None:
        return score.category
    assert score.value is not None, "scores without a value are not sent"
    return float(score.value)


def trace_score_payloads(
    scores: Iterable[ItemScore], environments: Mapping[str, str | None] | None = None
) -> dict[str, dict[str, Any]]:
    """Reference-free scores of production traces, on those traces (item id = trace id),
    each in its trace's environment when ``environments`` (trace id → environment) says
    (Langfuse puts a score without one in ``default``, out of the trace's views)."""
    environments = environments or {}
    payloads = {}
    for s in scores:
        if s.value is None:
            continue
        key = score_id("production", s.item_id, s.evaluator)
        environment = environments.get(s.item_id)
        payloads[key] = {
            "id": key,
            "traceId": s.item_id,
            **({"environment": environment} if environment else {}),
            "name": f"eval_{s.evaluator}",
            "value": sent_value(s),
            "comment": _comment(s.comment),
            "dataType": s.data_type,
            **({"metadata": s.metadata} if s.metadata else {}),
        }
    return payloads


def run_score_payloads(
    run_id: str,
    metrics: Mapping[str, float | None],
    *,
    evaluations: Mapping[str, RunEvaluation] | None = None,
    verdict: RunVerdict | None = None,
    dataset_run_id: str | None = None,
    environment: str | None = None,
) -> dict[str, dict[str, Any]]:
    """The run's own scores on its experiment (its dataset run: langfuse_experiments.py),
    else on its session (each item trace's session is the run); Langfuse takes exactly one
    of traceId, sessionId and datasetRunId, and lists a dataset run's scores as the
    experiment's columns. They are: the means (``run_<metric>``); the run-level
    evaluators' results under their own names (``avg_order_correctness``), as the SDK's
    ``run_experiment`` sends its ``run_evaluators``'; and the gate's conclusion:
    ``verdict`` (CATEGORICAL: PASS, FAIL, UNDECIDED, ERROR; its comment and metadata say
    why, the metric that backs it with Δ and interval, the margin and the baseline run),
    with ``verdict_delta`` and ``verdict_margin`` as numbers when the run was gated."""
    target = ({"datasetRunId": dataset_run_id} if dataset_run_id
              else {"sessionId": run_id})  # fmt: skip
    where = {**target, **({"environment": environment} if environment else {})}
    scores: list[tuple[str, str, float | str, str, str | None, dict[str, Any]]] = []
    for name, mean in metrics.items():
        if mean is not None:
            scores.append(("run", f"run_{name}", float(mean), "NUMERIC", None, {}))
    for name, evaluation in (evaluations or {}).items():
        if evaluation.value is not None:  # (an evaluator error: none to send)
            scores.append(("run-evaluation", name, float(evaluation.value), "NUMERIC",
                           evaluation.comment, {}))  # fmt: skip
    if verdict is not None:
        said, record = verdict.metadata(), verdict.record
        scores.append(("verdict", "verdict", record.verdict.value, "CATEGORICAL",
                       verdict.comment(), said))  # fmt: skip
        if record.delta is not None:
            scores.append(("verdict", "verdict_delta", round(record.delta, 3), "NUMERIC",
                           verdict.comment(), said))  # fmt: skip
        if verdict.margin is not None:
            scores.append(("verdict", "verdict_margin", float(verdict.margin), "NUMERIC",
                           verdict.comment(), said))  # fmt: skip
    payloads = {}
    for kind, name, value, data_type, comment, metadata in scores:
        key = score_id(run_id, kind, name.removeprefix("run_") if kind == "run" else name)
        payloads[key] = {
            "id": key, **where, "name": name, "value": value, "dataType": data_type,
            **({"comment": _comment(comment)} if comment else {}),
            "metadata": {**metadata, "run_id": run_id},
        }  # fmt: skip
    return payloads


def _comment(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_COMMENT_CHARS:
        return text
    return text[:MAX_COMMENT_CHARS] + f" … (cut: {len(text):,} characters in all)"


def write_back(
    settings: LangfuseSettings, store: ResultsStore, payloads: dict[str, dict[str, Any]]
) -> WritebackReport:
    """Send the outbox's backlog, then ``payloads``; queue what cannot go now, set aside
    what can never go."""
    backlog = store.queued(OUTBOX_KIND)
    pending = {**backlog, **payloads}
    delivery = Delivery()
    for key, payload in pending.items():
        if problem := unsendable(payload):
            delivery.set_aside[key] = problem
    sendable = [k for k in pending if k not in delivery.set_aside]
    with settings.http(TIMEOUT_S) as http:
        for batch in batches(sendable, pending):
            if not delivery.send(http, batch, pending):
                break  # the server is not taking anything now: the rest waits
    undelivered = {k: pending[k] for k in sendable
                   if k not in delivery.delivered and k not in delivery.set_aside}  # fmt: skip
    store.delivered(k for k in delivery.delivered if k in backlog)
    store.queue(OUTBOX_KIND, undelivered, delivery.error or "")
    for reason, keys in delivery.reasons().items():
        store.queue(SET_ASIDE_KIND, {k: pending[k] for k in keys}, reason)
    given_up = store.give_up(OUTBOX_KIND, SET_ASIDE_KIND, MAX_ATTEMPTS)
    reasons = list(delivery.reasons())
    if given_up:
        last = next(iter(given_up.values()))
        reasons.insert(0, f"not delivered in {MAX_ATTEMPTS} write-backs, last: {last}")
    return WritebackReport(
        sent=len(delivery.delivered),
        retried_from_outbox=len(backlog),
        queued=len(undelivered) - len(given_up),
        set_aside=len(delivery.set_aside) + len(given_up),
        error=delivery.error,
        set_aside_reasons=tuple(reasons[:3]),
    )


def unsendable(payload: dict[str, Any]) -> str | None:
    """Why this score can never be delivered (None: it can)."""
    value = payload.get("value")
    if payload.get("dataType") == "CATEGORICAL":
        if not isinstance(value, str) or not value:
            return f"category {value!r} is not a non-empty string"
    elif not isinstance(value, int | float) or not math.isfinite(value):
        return f"value {value!r} is not a finite number (JSON has no NaN or infinity)"
    if _size(_event(payload)) > BATCH_BYTES:
        return f"larger than {BATCH_BYTES:,} bytes"
    return None


def _event(payload: dict[str, Any]) -> dict[str, Any]:
    """A score-create ingestion event; its id is the score's, so the 207 names it."""
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"id": payload["id"], "type": "score-create", "timestamp": stamp, "body": payload}


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), allow_nan=False).encode())


def batches(keys: Sequence[str], payloads: dict[str, dict[str, Any]]) -> Iterable[list[str]]:
    """Consecutive keys whose events fit in BATCH_BYTES together."""
    batch: list[str] = []
    size = len('{"batch":[]}')
    for key in keys:
        event_size = _size(_event(payloads[key])) + 1  # and its comma
        if batch and size + event_size > BATCH_BYTES:
            yield batch
            batch, size = [], len('{"batch":[]}')
        batch.append(key)
        size += event_size
    if batch:
        yield batch


@dataclass
class Delivery:
    """What one write-back achieved: delivered ids, set-aside ids with their reason, and
    the error that stopped it (everything else then waits in the outbox)."""

    delivered: list[str] = field(default_factory=list)
    set_aside: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def reasons(self) -> dict[str, list[str]]:
        by_reason: dict[str, list[str]] = {}
        for key, reason in self.set_aside.items():
            by_reason.setdefault(reason, []).append(key)
        return by_reason

    def send(self, http: httpx.Client, batch: list[str], payloads: dict[str, Any],
             *, waited: bool = False) -> bool:  # fmt: skip
        """POST one batch; False when the server took nothing (stop, keep the rest). Rate
        limited (429), it waits as long as Retry-After asks, once, up to MAX_WAIT_S."""
        try:
            response = http.post("/api/public/ingestion",
                                 json={"batch": [_event(payloads[k]) for k in batch]})  # fmt: skip
        except httpx.HTTPError as exc:
            self.error = redact(describe_error(exc))
            return False
        wait = retry_after(response)
        if response.status_code == 429 and not waited and wait is not None and wait <= MAX_WAIT_S:
            time.sleep(wait)
            return self.send(http, batch, payloads, waited=True)
        if response.status_code == 413 and len(batch) > 1:  # split until it fits
            half = len(batch) // 2
            return self.send(http, batch[:half], payloads) and self.send(
                http, batch[half:], payloads
            )
        if response.status_code == 413:
            self.set_aside[batch[0]] = f"refused as too large: {response.text[:100]}"
            return True
        if response.status_code != 207:
            self.error = redact(describe_status(response.status_code, response.text[:200]))
            return False
        try:
            result = response.json()
        except ValueError:
            self.error = f"HTTP 207 with a body that is not JSON: {response.text[:100]!r}"
            return False
        self.delivered += [s["id"] for s in result.get("successes", []) if s.get("id") in batch]
        for failure in result.get("errors", []):
            key, status = failure.get("id"), failure.get("status")
            status = status if isinstance(status, int) else 500
            if key not in batch:
                continue
            if 400 <= status < 500 and status != 429:
                reason = failure.get("error") or failure.get("message") or f"HTTP {status}"
                self.set_aside[key] = redact(f"refused by Langfuse ({status}): {reason}")[:300]
            else:  # the server's trouble, not the score's: it waits in the outbox
                self.error = redact(f"HTTP {status}: {failure.get('error') or ''}")[:300]
        return True
