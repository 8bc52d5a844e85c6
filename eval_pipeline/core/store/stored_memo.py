"""Memoized item outputs in the results store (core/running/memo.py keys them): one row
per key, the latest successful output."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Table, select
from sqlalchemy.engine import Engine

from eval_pipeline.core.store.database import OnEngine
from eval_pipeline.core.store.records import ItemOutput, utcnow
from eval_pipeline.core.store.stored_outputs import output_record
from eval_pipeline.core.store.tables import item_memo

MEMO_FIELDS = ("output", "latency_ms", "input_tokens", "output_tokens", "cost_usd", "attempts",
               "usage")  # fmt: skip


class StoredMemo(OnEngine):
    def memo_put(self, suite: str, run_id: str, entries: dict[str, ItemOutput]) -> int:
        """Memoize successful outputs by key (an existing key is overwritten: refresh)."""
        rows = [
            {"memo_key": key, "suite": suite, "item_id": o.item_id, "repeat": o.repeat,
             "run_id": run_id, "created_at": utcnow(), **{f: getattr(o, f) for f in MEMO_FIELDS}}
            for key, o in entries.items() if o.ok and o.output is not None
        ]  # fmt: skip
        if rows:
            with self.engine.begin() as conn:
                upsert = _insert_for(self.engine)(item_memo).values(rows)
                conn.execute(upsert.on_conflict_do_update(
                    index_elements=["memo_key"],
                    set_={c: upsert.excluded[c] for c in ("run_id", "created_at", *MEMO_FIELDS)},
                ))  # fmt: skip
        return len(rows)

    def memo_get(self, keys: Iterable[str], *, run_id: str | None = None) -> dict[str, ItemOutput]:
        """Memoized outputs by key (only those produced by ``run_id``, if given); each output
        names the run that produced it in ``source_run_id``."""
        keys, found = list(keys), {}
        with self.engine.connect() as conn:
            for start in range(0, len(keys), 500):
                query = select(item_memo).where(item_memo.c.memo_key.in_(keys[start : start + 500]))
                if run_id is not None:
                    query = query.where(item_memo.c.run_id == run_id)
                for r in conn.execute(query).mappings():
                    found[r["memo_key"]] = output_record({
                        "item_id": r["item_id"], "repeat": r["repeat"],
                        "source_run_id": r["run_id"], **{f: r[f] for f in MEMO_FIELDS},
                    })  # fmt: skip
        return found


def _insert_for(engine: Engine) -> Callable[[Table], Any]:
    """The dialect's INSERT, which has ON CONFLICT DO UPDATE on SQLite and Postgres."""
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert
