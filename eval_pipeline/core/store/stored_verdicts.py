"""What runs concluded in the results store: their summaries, how each run settled and
its verdict, and the latest verdict of each suite × prompt version."""

from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import delete, insert, select, update

from eval_pipeline.core.scoring.summary import Summary
from eval_pipeline.core.store.database import OnEngine
from eval_pipeline.core.store.records import RunRecord, RunStatus, VerdictRecord, utcnow
from eval_pipeline.core.store.stored_runs import run_record
from eval_pipeline.core.store.tables import runs, summaries, verdicts


class StoredVerdicts(OnEngine):
    def write_summary(self, run_id: str, summary: Summary) -> None:
        """The run's summary (replacing an earlier one: a sequential run summarises after
        each batch); its status is ``settle_run``'s."""
        with self.engine.begin() as conn:
            conn.execute(delete(summaries).where(summaries.c.run_id == run_id))
            conn.execute(
                insert(summaries).values(
                    run_id=run_id, summary=summary.to_dict(), created_at=utcnow()
                )
            )

    def read_summary(self, run_id: str) -> Summary | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(summaries.c.summary).where(summaries.c.run_id == run_id)
            ).first()
        return Summary.from_dict(row[0]) if row else None

    def settle_run(self, run_id: str, status: RunStatus, verdict: VerdictRecord | None = None,
                   *, not_baseline: str | None = None) -> None:  # fmt: skip
        """The run has ended with its verdict known: complete, error or stopped (and, with
        ``not_baseline``, why it may never be a baseline)."""
        with self.engine.begin() as conn:
            conn.execute(update(runs).where(runs.c.run_id == run_id).values(
                status=status.value, finished_at=utcnow(), error=None,
                not_baseline=not_baseline))  # fmt: skip
            if verdict is not None:
                conn.execute(delete(verdicts).where(verdicts.c.run_id == run_id))
                conn.execute(insert(verdicts).values(**asdict(verdict)))

    def read_verdict(self, run_id: str) -> VerdictRecord | None:
        """What the run concluded, as ``settle_run`` kept it (None: not settled with one)."""
        with self.engine.connect() as conn:
            row = conn.execute(select(verdicts).where(verdicts.c.run_id == run_id)).mappings()
            found = row.first()
        return VerdictRecord(**found) if found is not None else None

    def latest_verdicts(self, suite: str | None = None) -> list[tuple[RunRecord, VerdictRecord]]:
        """Each suite × prompt version's latest settled run and what it concluded, by suite
        then version."""
        query = (select(runs, *[c.label(f"v_{c.name}") for c in verdicts.c])
                 .join(verdicts, verdicts.c.run_id == runs.c.run_id)
                 .order_by(runs.c.started_at.desc()))  # fmt: skip
        if suite is not None:
            query = query.where(runs.c.suite == suite)
        latest: dict[tuple[str, str], tuple[RunRecord, VerdictRecord]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(query).mappings():
                key = (row["suite"], row["prompt_version"])
                if key not in latest:
                    said = {c.name: row[f"v_{c.name}"] for c in verdicts.c}
                    run = run_record({k: v for k, v in row.items() if not k.startswith("v_")})
                    latest[key] = (run, VerdictRecord(**said))
        return [latest[k] for k in sorted(latest, key=lambda k: (k[0], _version_order(k[1])))]


def _version_order(version: str) -> tuple[int, int, str]:
    """v2 before v10; a version that is not vN (a hash) after them."""
    number = version[1:]
    return (0, int(number), "") if version[:1] == "v" and number.isdigit() else (1, 0, version)
