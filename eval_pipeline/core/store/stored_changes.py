"""What a team decided about its suites' baselines, kept in the results store as history:
runs retired (never chosen as a baseline) and restored, a suite's baseline pinned to a run
and unpinned. Nothing is deleted: the latest change of a run (retire, restore), or of a
suite and baseline label (pin, unpin), is the one that holds."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import insert, select

from eval_pipeline.core.store.database import OnEngine
from eval_pipeline.core.store.tables import baseline_changes

Action = Literal["retire", "restore", "pin", "unpin"]
DONE = {"retire": "retired", "restore": "restored", "pin": "pinned", "unpin": "unpinned"}


@dataclass(frozen=True)
class BaselineChange:
    """One decision: who did ``action`` to run ``run_id`` of ``suite``, when and why (a
    pin's and an unpin's baseline ``label``)."""

    suite: str
    run_id: str
    action: Action
    by: str
    why: str
    at: datetime
    label: str | None = None

    def line(self) -> str:
        """``retired by ann on 2026-11-27 21:40 UTC: its cases were init's placeholders``"""
        return f"{DONE[self.action]} by {self.by} on {self.at:%Y-%m-%d %H:%M} UTC: {self.why}"


class StoredChanges(OnEngine):
    def record_change(self, change: BaselineChange) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(baseline_changes).values(**asdict(change)))

    def changes(self, suite: str) -> list[BaselineChange]:
        """Every decision about ``suite``'s baselines, oldest first."""
        query = (select(baseline_changes).where(baseline_changes.c.suite == suite)
                 .order_by(baseline_changes.c.id))  # fmt: skip
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        found = []
        for row in rows:
            values = {k: v for k, v in row.items() if k != "id"}
            if values["at"].tzinfo is None:
                values["at"] = values["at"].replace(tzinfo=UTC)  # SQLite drops the zone
            found.append(BaselineChange(**values))
        return found

    def retired(self, suite: str) -> dict[str, BaselineChange]:
        """The runs of ``suite`` retired now, each with the retirement that holds."""
        latest: dict[str, BaselineChange] = {}
        for change in self.changes(suite):
            if change.action in ("retire", "restore"):
                latest[change.run_id] = change
        return {run: c for run, c in latest.items() if c.action == "retire"}

    def pins(self, suite: str) -> dict[str, BaselineChange]:
        """The pins of ``suite`` that hold, by baseline label."""
        latest: dict[str, BaselineChange] = {}
        for change in self.changes(suite):
            if change.action in ("pin", "unpin") and change.label is not None:
                latest[change.label] = change
        return {label: c for label, c in latest.items() if c.action == "pin"}
