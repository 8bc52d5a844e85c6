"""The item scores of runs in the results store."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, fields

import pandas as pd
from sqlalchemy import insert, select

from eval_pipeline.core.store.database import OnEngine
from eval_pipeline.core.store.records import ItemScore
from eval_pipeline.core.store.tables import item_scores, replace_rows


class StoredScores(OnEngine):
    def write_scores(self, run_id: str, scores: Iterable[ItemScore], *, add: bool = False) -> int:
        """Replace the run's scores; with ``add``, add these to them (a further batch)."""
        rows = [{"run_id": run_id, **asdict(s)} for s in scores]
        if not add:
            return replace_rows(self.engine, item_scores, run_id, rows)
        if rows:
            with self.engine.begin() as conn:
                conn.execute(insert(item_scores), rows)
        return len(rows)

    def read_scores(self, run_id: str) -> list[ItemScore]:
        query = (
            select(item_scores)
            .where(item_scores.c.run_id == run_id)
            .order_by(item_scores.c.item_id, item_scores.c.repeat, item_scores.c.evaluator)
        )
        names = [f.name for f in fields(ItemScore)]
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings()
            return [
                ItemScore(**({n: r[n] for n in names} | {"data_type": r["data_type"] or "NUMERIC"}))
                for r in rows
            ]

    def scores_frame(self, run_id: str) -> pd.DataFrame:
        columns = ["item_id", "repeat", "evaluator", "value", "comment"]
        return pd.DataFrame([asdict(s) for s in self.read_scores(run_id)], columns=columns)
