"""The item outputs of runs in the results store (a shard writes only its own items)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, fields
from typing import Any

from sqlalchemy import delete, insert, select, tuple_

from eval_pipeline.core.store.database import OnEngine
from eval_pipeline.core.store.records import ItemOutput
from eval_pipeline.core.store.tables import item_outputs, replace_rows


class StoredOutputs(OnEngine):
    def write_outputs(
        self,
        run_id: str,
        outputs: Iterable[ItemOutput],
        *,
        items: Sequence[tuple[str, int]] | None = None,
    ) -> int:
        """Replace the run's outputs; with ``items`` (a shard's (item id, repeat) pairs) only
        those items'."""
        rows = [{"run_id": run_id, **asdict(o)} for o in outputs]
        if items is None:
            return replace_rows(self.engine, item_outputs, run_id, rows)
        key = tuple_(item_outputs.c.item_id, item_outputs.c.repeat)
        with self.engine.begin() as conn:
            for start in range(0, len(items), 400):  # under every database's parameter limit
                chunk = list(items[start : start + 400])
                conn.execute(delete(item_outputs).where(
                    item_outputs.c.run_id == run_id, key.in_(chunk)
                ))  # fmt: skip
            if rows:
                conn.execute(insert(item_outputs), rows)
        return len(rows)

    def read_outputs(self, run_id: str) -> list[ItemOutput]:
        query = (
            select(item_outputs)
            .where(item_outputs.c.run_id == run_id)
            .order_by(item_outputs.c.item_id, item_outputs.c.repeat)
        )
        names = [f.name for f in fields(ItemOutput)]
        with self.engine.connect() as conn:
            return [output_record({n: r[n] for n in names})
                    for r in conn.execute(query).mappings()]  # fmt: skip


def output_record(values: dict[str, Any]) -> ItemOutput:
    """A stored output; columns an older store left empty get their defaults."""
    defaults: dict[str, Any] = {"usage": {}, "unpriced_models": []}
    return ItemOutput(**{k: defaults[k] if v is None and k in defaults else v
                         for k, v in values.items()})  # fmt: skip
