"""The outbox in the results store: deliveries to external systems (scores to Langfuse)
that failed and wait for the next run, keyed by a deterministic id (queuing the same
thing twice keeps one row)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, insert, select, update

from eval_pipeline.core.store.database import OnEngine
from eval_pipeline.core.store.records import utcnow
from eval_pipeline.core.store.tables import outbox


class Outbox(OnEngine):
    def queue(self, kind: str, items: dict[str, dict[str, Any]], error: str) -> None:
        """Put undelivered payloads (by id) in the outbox; re-queuing counts an attempt."""
        if not items:
            return
        with self.engine.begin() as conn:
            known = {
                row.id: row.attempts
                for row in conn.execute(
                    select(outbox.c.id, outbox.c.attempts).where(outbox.c.id.in_(list(items)))
                )
            }
            conn.execute(delete(outbox).where(outbox.c.id.in_(list(known))))
            rows = [
                {"id": key, "kind": kind, "payload": payload, "attempts": known.get(key, 0) + 1,
                 "last_error": error, "queued_at": utcnow()}
                for key, payload in items.items()
            ]  # fmt: skip
            conn.execute(insert(outbox), rows)

    def queued(self, kind: str, limit: int = 10_000) -> dict[str, dict[str, Any]]:
        query = select(outbox.c.id, outbox.c.payload).where(outbox.c.kind == kind)
        with self.engine.connect() as conn:
            return {row.id: row.payload for row in conn.execute(query.limit(limit))}

    def give_up(self, kind: str, to_kind: str, max_attempts: int) -> dict[str, str]:
        """Move the payloads of ``kind`` queued ``max_attempts`` times or more to
        ``to_kind`` (kept, never sent again); their ids and last errors."""
        stale = (outbox.c.kind == kind) & (outbox.c.attempts >= max_attempts)
        with self.engine.begin() as conn:
            rows = conn.execute(select(outbox.c.id, outbox.c.last_error).where(stale))
            found = {row.id: row.last_error or "" for row in rows}
            if found:
                conn.execute(update(outbox).where(stale).values(kind=to_kind))
        return found

    def queue_errors(self, kind: str) -> dict[str, str]:
        """The last error of each queued payload of ``kind`` (by id)."""
        query = select(outbox.c.id, outbox.c.last_error).where(outbox.c.kind == kind)
        with self.engine.connect() as conn:
            return {row.id: row.last_error or "" for row in conn.execute(query)}

    def delivered(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        with self.engine.begin() as conn:
            for start in range(0, len(ids), 500):
                conn.execute(delete(outbox).where(outbox.c.id.in_(ids[start : start + 500])))
