"""Which suite and version passed: the latest verdict of every suite × prompt version in
the results store, one row each, for ``eval-pipeline verdicts`` and Dagster's
``verdicts`` table (on eval_summary)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eval_pipeline.core.scoring.summary import md_escape
from eval_pipeline.core.store.records import RunRecord, VerdictRecord
from eval_pipeline.core.store.results_store import ResultsStore


@dataclass(frozen=True)
class VerdictRow:
    run: RunRecord
    said: VerdictRecord

    @property
    def decided(self) -> str:
        """After how many cases a sequential gate decided; "–" for a fixed one."""
        return self.said.decided_after or "–"

    @property
    def when(self) -> str:
        stamp = self.run.finished_at or self.run.started_at
        return stamp.strftime("%Y-%m-%d %H:%M")

    def cells(self) -> dict[str, str]:
        """The row as plain text, column by column (Dagster's table, inline where
        eval_summary opens): its verdict marked with its colour (``MARKS``)."""
        run, said = self.run, self.said
        backed = f"{said.metric} Δ {said.delta_text} {said.interval_text}" if said.metric else "–"
        return {"suite": run.suite, "version": run.prompt_version,
                "verdict": f"{MARKS.get(said.verdict, '')} {said.verdict}".strip(),
                "backed by": backed, "why": said.reason[:120] or "–",
                "decided": self.decided, "tier": run.tier, "run": run.run_id}  # fmt: skip


# Each verdict's colour, as text can carry it (a Dagster table cell shows plain text)
MARKS = {"PASS": "🟢", "FAIL": "🔴", "UNDECIDED": "🟡", "ERROR": "⚫"}


def latest_verdicts(store: ResultsStore, suite: str | None = None) -> list[VerdictRow]:
    return [VerdictRow(run, said) for run, said in store.latest_verdicts(suite)]


def verdicts_markdown(rows: Sequence[VerdictRow], limit: int = 60) -> str:
    """The table Dagster shows; each run links to its Dagster run when it had one."""
    lines = ["| suite | version | tier | verdict | metric | Δ | interval | decided | run |",
             "|---|---|---|---|---|---:|---|---|---|"]  # fmt: skip
    for row in rows[:limit]:
        run, said = row.run, row.said
        link = f"[{run.run_id}](/runs/{run.dagster_run_id})" if run.dagster_run_id \
            else md_escape(run.run_id)  # fmt: skip
        verdict = said.verdict + (f": {md_escape(said.reason[:80])}" if said.reason else "")
        lines.append(f"| {md_escape(run.suite)} | {run.prompt_version} | {run.tier} | "
                     f"{verdict} | {md_escape(said.metric or '–')} | {said.delta_text} | "
                     f"{said.interval_text} | "
                     f"{md_escape(row.decided)} | {link} |")  # fmt: skip
    if len(rows) > limit:
        lines.append(f"| … {len(rows) - limit} more: `eval-pipeline verdicts` | | | | | | | | |")
    return "\n".join(lines)
