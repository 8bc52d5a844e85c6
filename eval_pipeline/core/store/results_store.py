"""The results store: runs, item outputs, item scores, summaries and verdicts, the memo,
the Langfuse outbox and the team's baseline decisions, in one database (SQLAlchemy Core).

SQLite file by default, Postgres by URL. Every write method is one transaction, so a
crash leaves either the previous state or the new one, never half of it. Each piece is a
module of its own over the store's one engine (stored_runs, stored_outputs, stored_scores,
stored_verdicts, stored_memo, outbox, stored_changes); ``ResultsStore`` is them all, the
one object callers hold. The schema is tables.py, brought up to date on open by migrate.py.
"""

from __future__ import annotations

from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from eval_pipeline.core.store import migrate
from eval_pipeline.core.store.database import (
    ResultsStoreError,
    check_backend,
    masked,
    normalise_url,
    open_engine,
)
from eval_pipeline.core.store.outbox import Outbox
from eval_pipeline.core.store.records import RunRecord
from eval_pipeline.core.store.stored_changes import StoredChanges
from eval_pipeline.core.store.stored_memo import StoredMemo
from eval_pipeline.core.store.stored_outputs import StoredOutputs
from eval_pipeline.core.store.stored_runs import StoredRuns
from eval_pipeline.core.store.stored_scores import StoredScores
from eval_pipeline.core.store.stored_verdicts import StoredVerdicts

__all__ = ["ResultsStore", "ResultsStoreError"]


class ResultsStore(StoredRuns, StoredOutputs, StoredScores, StoredVerdicts, StoredMemo, Outbox,
                   StoredChanges):  # fmt: skip
    def __init__(self, url: str):
        self.url = normalise_url(url)
        check_backend(self.url)
        try:
            super().__init__(open_engine(self.url))
            migrate.upgrade(self.engine)
        except (SQLAlchemyError, ArgumentError, OSError, ValueError, ImportError) as exc:
            reason = type(exc).__name__
            raise ResultsStoreError(
                f"cannot open the results store at {masked(self.url)} ({reason}). "
                "Check EVAL_RESULTS_URL, that the server is running and reachable, and the "
                "credentials."
            ) from None

    def __repr__(self) -> str:
        return f"ResultsStore({masked(self.url)})"

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    def dispose(self) -> None:
        self.engine.dispose()

    def metric_history(
        self, suite: str, metric: str, *, tier: str = "full", limit: int = 60
    ) -> list[tuple[RunRecord, float, float]]:
        """(run, mean, standard error) of a metric over the suite's complete runs, oldest
        first: the trend behind the nightly chart."""
        history = []
        for run in reversed(self.list_runs(suite=suite, status="complete", tier=tier,
                                           limit=limit)):  # fmt: skip
            summary = self.read_summary(run.run_id)
            mean = summary.metric(metric) if summary else None
            if summary and mean is not None:
                se = summary.metric_se.get(metric) or 0.0
                history.append((run, float(mean), float(se)))
        return history
