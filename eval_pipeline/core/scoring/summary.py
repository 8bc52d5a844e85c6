"""Summaries of a run: means per evaluator, per category and difficulty, latency, cost.

Means are taken over per-case means (repeats are averaged first), so a case run five
times weighs as much as a case run once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.records import ItemOutput, ItemScore
from eval_pipeline.core.reducers import flaky_items
from eval_pipeline.core.stats import mean_se
from eval_pipeline.evaluators.behavioural import PASS_AT


def scores_table(cases: Sequence[GoldenCase], scores: Sequence[ItemScore]) -> pd.DataFrame:
    """Long table: item_id, repeat, evaluator, value, category, difficulty."""
    frame = pd.DataFrame(
        [(s.item_id, s.repeat, s.evaluator, s.value) for s in scores],
        columns=["item_id", "repeat", "evaluator", "value"],
    )
    meta = pd.DataFrame(
        [(c.id, c.category, c.metadata.difficulty) for c in cases],
        columns=["item_id", "category", "difficulty"],
    )
    return frame.merge(meta, on="item_id", how="left")


def per_case_means(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (item, evaluator): the mean over repeats."""
    return (
        table.groupby(["item_id", "evaluator", "category", "difficulty"], dropna=False)["value"]
        .mean()
        .reset_index()
    )


def _pivot(per_case: pd.DataFrame, by: str) -> dict[str, dict[str, Any]]:
    if per_case.empty:
        return {}
    means = per_case.pivot_table(index=by, columns="evaluator", values="value", aggfunc="mean")
    counts = per_case.groupby(by)["item_id"].nunique()
    return {
        str(key): {"n": int(counts[key]), **{k: _r(v) for k, v in row.items()}}
        for key, row in means.iterrows()
    }


def _r(value: Any) -> float | None:
    return None if pd.isna(value) else round(float(value), 4)


def summarize(
    cases: Sequence[GoldenCase],
    outputs: Sequence[ItemOutput],
    scores: Sequence[ItemScore],
    run_evaluations: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A JSON-able summary; small enough for Dagster metadata and the results store."""
    per_case = per_case_means(scores_table(cases, scores))
    metrics = per_case.groupby("evaluator")["value"].mean() if not per_case.empty else {}
    latencies = pd.Series([o.latency_ms for o in outputs], dtype=float)
    errors = sorted({o.item_id for o in outputs if o.error})
    return {
        "n_cases": len({o.item_id for o in outputs}),
        "n_items": len(outputs),
        "repeats": max((o.repeat for o in outputs), default=-1) + 1,
        "n_errors": sum(1 for o in outputs if o.error),
        "error_items": errors[:50],
        "metrics": {k: _r(v) for k, v in dict(metrics).items()},
        "metric_se": {  # standard errors over per-case means, never over run averages
            str(k): _r(mean_se(group.dropna().tolist()).se) if group.notna().any() else None
            for k, group in per_case.groupby("evaluator")["value"]
        },
        "flaky_items": flaky_items(scores),
        "passed": _passed(per_case),
        "by_category": _pivot(per_case, "category"),
        "by_difficulty": _pivot(per_case, "difficulty"),
        "run_evaluations": run_evaluations or {},
        "latency_ms": {
            "p50": _r(latencies.quantile(0.5)) if len(latencies) else None,
            "p95": _r(latencies.quantile(0.95)) if len(latencies) else None,
            "mean": _r(latencies.mean()) if len(latencies) else None,
        },
        "tokens": {
            "input": int(sum(o.input_tokens for o in outputs)),
            "output": int(sum(o.output_tokens for o in outputs)),
        },
        "cost_usd": round(sum(o.cost_usd for o in outputs), 6),
        "attempts": int(sum(o.attempts for o in outputs)),
        # Reused from the memo (core/memo.py): their cost and latency are those of the run
        # that produced them; "spent" is what this run paid.
        "n_reused": sum(1 for o in outputs if o.source_run_id),
        "cost_usd_spent": round(sum(o.cost_usd for o in outputs if not o.source_run_id), 6),
    }


def _passed(per_case: pd.DataFrame) -> dict[str, Any] | None:
    """Seed 001's pass count: cases whose behavioural ``overall`` is at least 0.7."""
    overall = per_case[per_case["evaluator"] == "overall"]["value"] if not per_case.empty else []
    if len(overall) == 0:
        return None
    return {
        "metric": "overall",
        "threshold": PASS_AT,
        "count": int((overall >= PASS_AT).sum()),
        "of": len(overall),
    }


def markdown_table(rows: dict[str, dict[str, Any]], key_title: str) -> str:
    """Render a {row: {column: value}} mapping as a Markdown table."""
    if not rows:
        return "_no rows_"
    columns = sorted({c for r in rows.values() for c in r if c != "n"})
    head = f"| {key_title} | n | " + " | ".join(columns) + " |"
    sep = "|---|---:|" + "---:|" * len(columns)
    lines = [head, sep]
    for key, row in rows.items():
        cells = [_fmt(row.get(c)) for c in columns]
        lines.append(f"| {md_escape(key)} | {row.get('n', '')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


MD_SPECIAL = "\\`*_{}[]<>|#"


def md_escape(text: str) -> str:
    """Data (ids, categories, comments) must not inject Markdown or HTML into reports, nor
    break a table row with a line break."""
    for ch in MD_SPECIAL:
        text = text.replace(ch, "\\" + ch)
    return " ".join(text.splitlines())
