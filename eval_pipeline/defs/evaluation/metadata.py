"""Dagster metadata for the evaluation assets: small numbers and Markdown tables only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from dagster import (
    DagsterLogManager,
    MetadataValue,
    TableColumn,
    TableMetadataValue,
    TableRecord,
    TableSchema,
)

from eval_pipeline.core.evaluation import EvalResult
from eval_pipeline.core.reports import charts
from eval_pipeline.core.reports.exports import errors_markdown
from eval_pipeline.core.reports.verdict_table import VerdictRow
from eval_pipeline.core.scoring.rows import Row
from eval_pipeline.core.scoring.summary import Summary, md_escape, summarize
from eval_pipeline.core.store.baselines import flips_across_runs
from eval_pipeline.core.store.records import ItemOutput, RunRecord
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import GoldenCase, dataset_version
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.defs.storage import chart_folder
from eval_pipeline.evaluators.behavioural import calls_made, missing_calls

MAX_TABLE_ROWS = 25


def dataset_metadata(suite: Suite, cases: Sequence[GoldenCase]) -> dict[str, Any]:
    by_category = Counter(c.category for c in cases)
    rows = {cat: {"n": n} for cat, n in sorted(by_category.items())}
    table = "| category | cases |\n|---|---:|\n" + "\n".join(
        f"| {md_escape(k)} | {v['n']} |" for k, v in rows.items()
    )
    return {
        "cases": len(cases),
        "smoke_cases": sum(1 for c in cases if c.tier == "smoke"),
        "dataset_version": dataset_version(cases),
        "dataset_dir": str(suite.dataset_dir),
        "dataset_source": suite.dataset_origin,  # a folder, or langfuse:NAME[@VERSION]
        "by_category": MetadataValue.md(table),
    }


def outputs_metadata(run: RunRecord, outputs: Sequence[ItemOutput]) -> dict[str, Any]:
    summary = summarize([], outputs, [])
    errors = [o for o in outputs if o.error]
    meta: dict[str, Any] = {
        "run_id": run.run_id,
        "items": len(outputs),
        "errors": len(errors),
        "dataset_version": run.dataset_version,
        "model": run.model,
        "provider": str(run.model_params.get("provider", "")),
        "temperature": run.model_params.get("temperature"),
        "prompt": f"{run.prompt_name} {run.prompt_version}" if run.prompt_name else "none",
        "prompt_hash": run.prompt_hash,
        "latency_p50_ms": summary.latency_ms.p50 or 0.0,
        "latency_p95_ms": summary.latency_ms.p95 or 0.0,
        "input_tokens": summary.tokens.input,
        "output_tokens": summary.tokens.output,
        "cost_usd": summary.cost_usd,
        "attempts": summary.attempts,
        "reused_from_memo": summary.n_reused,
        "cost_usd_spent": summary.cost_usd_spent,
    }
    meta |= errors_metadata(summary)
    if errors:
        lines = [
            f"| {md_escape(o.item_id)} | {o.repeat} | {md_escape(o.error or '')[:200]} |"
            for o in errors[:MAX_TABLE_ROWS]
        ]
        meta["error_items"] = MetadataValue.md(
            "| item | repeat | error |\n|---|---:|---|\n" + "\n".join(lines)
        )
    return meta


def errors_metadata(summary: Summary) -> dict[str, Any]:
    """Errors by kind (count, first items, whose, an example) and a count per kind to plot;
    the scores evaluators could not give, likewise."""
    meta: dict[str, Any] = {}
    if summary.errors_by_kind:
        meta["errors_by_kind"] = MetadataValue.md(errors_markdown(summary.errors_by_kind))
        meta |= {f"errors_{kind}": found.count for kind, found in summary.errors_by_kind.items()}
    if summary.score_errors_by_kind:
        meta["scores_not_given"] = MetadataValue.md(errors_markdown(summary.score_errors_by_kind))
    return meta


def rows_markdown(rows: Sequence[Row | dict[str, Any]]) -> str:
    """Rows of one kind (typed rows, or same-keyed dicts) as a Markdown table (cells
    escaped, long tables cut)."""
    cells = [r.cells() if isinstance(r, Row) else r for r in rows]
    columns = list(cells[0])
    lines = [
        "| " + " | ".join(md_escape(_cell(row.get(c))) for c in columns) + " |"
        for row in cells[:MAX_TABLE_ROWS]
    ]
    table = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n" + "\n".join(lines)
    if len(rows) > MAX_TABLE_ROWS:
        table += f"\n\n… {len(rows) - MAX_TABLE_ROWS} more rows in the results store"
    return table


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "" if value is None else str(value)[:200]


def verdicts_table(rows: Sequence[VerdictRow]) -> TableMetadataValue:
    """Every suite × version's latest verdict as a Dagster table: shown inline (a Markdown
    value longer than 1000 characters is a "[Show Markdown]" button), its verdicts marked
    with their colours."""
    cells = [row.cells() for row in rows]
    names = list(cells[0]) if cells else ["suite", "version", "verdict"]
    return MetadataValue.table(
        records=[TableRecord(row) for row in cells],
        schema=TableSchema(columns=[TableColumn(name, "string") for name in names]),
    )


def progress_logger(log: DagsterLogManager, label: str) -> Callable[[int, int], None]:
    """Log a line at every 10% of the items (periodic progress in the Dagster run log)."""
    last = [-1]

    def report(done: int, total: int) -> None:
        decile = done * 10 // total
        if decile > last[0] or done == total:
            last[0] = decile
            log.info(f"{label}: {done}/{total} items done")

    return report


def summary_pictures(store: ResultsStore, result: EvalResult, suite: Suite) -> dict[str, Any]:
    """Trend and per-category change as inline Markdown tables with text bars, and as PNG
    charts (core/reports/charts.py ``run_charts``, the CLI report's; kept under
    EVAL_HOME/charts or in the shared bucket (defs/storage.py, ``charts_at``), and in the
    metadata as data URIs that Dagster shows behind "[Show Markdown]"); flaky items across
    repeats and across runs of this version."""
    run = result.run
    meta: dict[str, Any] = {}
    with chart_folder(run.suite) as folder:  # this machine's, or the shared bucket (storage.py)
        drawn = charts.run_charts(store, result, folder.path / run.run_id)
        if drawn.trend:
            meta["trend"] = MetadataValue.md(charts.trend_markdown(drawn.trend, drawn.metric))
            image = charts.markdown_image(drawn.files["trend"], f"{drawn.metric} trend")
            meta["trend_chart"] = MetadataValue.md(image)
        if drawn.categories:
            table = charts.delta_markdown(drawn.categories, drawn.metric)
            meta["category_change"] = MetadataValue.md(table)
            image = charts.markdown_image(drawn.files["per-category delta"], "deltas")
            meta["category_delta_chart"] = MetadataValue.md(image)
    if drawn.files:
        meta["charts_at"] = ", ".join(folder.kept_at)
    summary = store.read_summary(run.run_id)
    if summary is not None and (flaky := summary.flaky_items):
        meta["flaky_items"] = MetadataValue.md(rows_markdown(flaky))
    metric = suite.thresholds.primary_metric
    if flips := flips_across_runs(store, run, metric, suite.thresholds):
        meta["flaky_across_runs"] = MetadataValue.md(rows_markdown(flips))
    return meta


def tools_metadata(store: ResultsStore, run: RunRecord, cases: Sequence[GoldenCase]) -> dict:
    """Behavioural suites: the tools each case called (and the handoffs it made) next to
    the ones it expected."""
    expected = {c.id: (c.expected_output or {}).get("expected_tools") for c in cases}
    if not any(v is not None for v in expected.values()):
        return {}
    rows = []
    for output in store.read_outputs(run.run_id):
        if output.repeat != 0:
            continue
        wanted = expected.get(output.item_id) or []
        rows.append(
            {
                "item": output.item_id,
                "expected": ", ".join(wanted) or "–",
                "called": ", ".join(calls_made(output.output)) or "–",
                "missing": ", ".join(missing_calls(output.output, wanted)) or "–",
            }
        )
    rows.sort(key=lambda r: (r["missing"] == "–", r["item"]))  # misses first
    return {"tools_called_vs_expected": MetadataValue.md(rows_markdown(rows))} if rows else {}


def steps_metadata(store: ResultsStore, run: RunRecord) -> dict:
    """Trajectory suites: per reference step, how many items got it right (survival)."""
    per_step: dict[int, list[float]] = {}
    for output in store.read_outputs(run.run_id):
        for step in (output.output or {}).get("steps") or []:
            per_step.setdefault(int(step["step"]), []).append(float(step["score"]))
    if not per_step:
        return {}
    rows = [
        {"step": k, "items": len(v), "passed": int(sum(v)), "share": round(sum(v) / len(v), 3)}
        for k, v in sorted(per_step.items())
    ]
    return {"per_step_survival": MetadataValue.md(rows_markdown(rows))}
