"""The runs in the results store: recorded, annotated, failed, abandoned, listed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, insert, select, update

from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.store.database import OnEngine
from eval_pipeline.core.store.records import RunRecord, RunStatus, utcnow
from eval_pipeline.core.store.tables import item_outputs, item_scores, runs, summaries


class StoredRuns(OnEngine):
    def create_run(self, run: RunRecord) -> None:
        """Insert the run; an existing run_id is reset (re-execution starts clean)."""
        row = run.to_dict()
        with self.engine.begin() as conn:
            exists = conn.execute(select(runs.c.run_id).where(runs.c.run_id == run.run_id)).first()
            if exists:
                for table in (summaries, item_scores, item_outputs):
                    conn.execute(delete(table).where(table.c.run_id == run.run_id))
                conn.execute(update(runs).where(runs.c.run_id == run.run_id).values(**row))
            else:
                conn.execute(insert(runs).values(**row))

    def add_notes(self, run_id: str, notes: list[str]) -> None:
        """Append notes to a run (e.g. the agent never read the prompt under test)."""
        if not notes:
            return
        with self.engine.begin() as conn:
            row = conn.execute(select(runs.c.notes).where(runs.c.run_id == run_id)).first()
            known = list(row[0] or []) if row else []
            fresh = [n for n in notes if n not in known]
            conn.execute(update(runs).where(runs.c.run_id == run_id).values(notes=known + fresh))

    def stop_run(self, run_id: str, why: str) -> None:
        """Say why the run left items unstarted (a budget reached), kept with what an
        earlier part of it said (another shard, an earlier batch)."""
        with self.engine.begin() as conn:
            row = conn.execute(select(runs.c.stopped).where(runs.c.run_id == run_id)).first()
            said = [s for s in ((row[0] if row else None) or "").split("; ") if s]
            stopped = "; ".join([*said, why]) if why not in said else "; ".join(said)
            conn.execute(update(runs).where(runs.c.run_id == run_id).values(stopped=stopped))

    def abandon(
        self,
        why_ended: Callable[[RunRecord], str | None],
        *,
        suite: str | None = None,
        prompt_version: str | None = None,
    ) -> list[str]:
        """Mark ``abandoned`` each running run (of ``suite`` / ``prompt_version``) for which
        ``why_ended`` says why its driver ended before it did (None: it has not); what it
        finished is kept. Their ids. (service/run.py ``abandon_ended`` decides why.)"""
        running = runs.c.status == RunStatus.RUNNING.value
        for column, value in (("suite", suite), ("prompt_version", prompt_version)):
            if value is not None:
                running &= runs.c[column] == value
        gone = []
        with self.engine.begin() as conn:
            found = conn.execute(select(runs).where(running)).mappings()
            for run in [run_record(r) for r in found]:
                if (why := why_ended(run)) is None:
                    continue
                conn.execute(update(runs).where(runs.c.run_id == run.run_id).values(
                    status=RunStatus.ABANDONED.value, finished_at=utcnow(), error=why))  # fmt: skip
                gone.append(run.run_id)
        return gone

    def fail_run(self, run_id: str, error: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(runs)
                .where(runs.c.run_id == run_id)
                .values(status="failed", finished_at=utcnow(), error=error)
            )

    def get_run(self, run_id: str) -> RunRecord | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).mappings().first()
        return run_record(row) if row else None

    def list_runs(
        self,
        *,
        suite: str | None = None,
        prompt_version: str | None = None,
        status: str | None = None,
        tier: str | None = None,
        limit: int = 100,
    ) -> list[RunRecord]:
        query = select(runs).order_by(runs.c.started_at.desc()).limit(limit)
        for column, value in (("suite", suite), ("prompt_version", prompt_version),
                              ("status", status), ("tier", tier)):  # fmt: skip
            if value is not None:
                query = query.where(runs.c[column] == value)
        with self.engine.connect() as conn:
            return [run_record(r) for r in conn.execute(query).mappings()]

    def evaluated(self) -> list[tuple[str, str]]:
        """Every suite × prompt version with a run, each once."""
        query = select(runs.c.suite, runs.c.prompt_version).distinct()
        with self.engine.connect() as conn:
            return sorted((r.suite, r.prompt_version) for r in conn.execute(query))


def run_record(row: Any) -> RunRecord:
    """A stored run; what an older store left empty gets its default."""
    values = {f.name: row[f.name] for f in fields(RunRecord)}
    values["notes"] = values["notes"] or []  # a store from before notes existed
    values["status"] = RunStatus(values["status"])
    values["agent_versioned"] = bool(values["agent_versioned"])
    values["options"] = stored_options(values["options"])
    for key in ("started_at", "finished_at"):
        if isinstance(values[key], datetime) and values[key].tzinfo is None:
            values[key] = values[key].replace(tzinfo=UTC)  # SQLite drops the zone
    return RunRecord(**values)


def stored_options(stored: dict[str, Any] | None) -> RunOptions:
    """A run's options as stored: those this version knows (an option a newer or older
    release stored and this one does not know is left out; a missing one is the default)."""
    known = {k: v for k, v in (stored or {}).items() if k in RunOptions.model_fields}
    return RunOptions.model_validate(known)
