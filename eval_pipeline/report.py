"""The terminal report of a run (rich tables), shared by `run` and `demo`."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from eval_pipeline.core.gate import GateReport
from eval_pipeline.core.records import RunRecord
from eval_pipeline.core.thresholds import CheckOutcome


def print_report(
    console: Console,
    run: RunRecord,
    summary: dict[str, Any],
    checks: list[tuple[str, CheckOutcome, bool]],
) -> None:
    console.rule(f"[bold]EVALUATION REPORT — {run.suite} ({run.tier} tier)")
    console.print(
        f"Run {run.run_id}  ·  prompt {run.prompt_name} {run.prompt_version} "
        f"({run.prompt_hash})  ·  model {run.model}  ·  dataset {run.dataset_version}"
    )
    console.print(
        f"Cases: {summary['n_cases']}  ·  items: {summary['n_items']} "
        f"({summary['repeats']} repeat(s))  ·  errors: {summary['n_errors']}  ·  "
        f"reused from memo: {summary.get('n_reused', 0)}"
    )
    metrics = Table(title="Mean score per evaluator (over per-case means)")
    metrics.add_column("evaluator")
    metrics.add_column("mean", justify="right")
    for name, value in summary["metrics"].items():
        metrics.add_row(name, _pct(value))
    for name, result in summary["run_evaluations"].items():
        metrics.add_row(f"{name} (run level)", _pct(result.get("value")))
    console.print(metrics)
    if passed := summary.get("passed"):
        console.print(
            f"Passed: {passed['count']}/{passed['of']} "
            f"({passed['metric']} >= {passed['threshold']:.2f})"
        )
    console.print(_slice_table("category", summary["by_category"]))
    lat, tok = summary["latency_ms"], summary["tokens"]
    console.print(
        f"Latency p50/p95: {lat['p50'] or 0:.0f} ms / {lat['p95'] or 0:.0f} ms  ·  "
        f"tokens in/out: {tok['input']:,} / {tok['output']:,}  ·  "
        f"estimated cost: ${summary['cost_usd']:.4f} "
        f"(spent by this run: ${summary.get('cost_usd_spent', summary['cost_usd']):.4f})"
    )
    gates = Table(title="Checks")
    for column in ("check", "severity", "result", "details"):
        gates.add_column(column)
    for name, outcome, blocking in checks:
        verdict = "[green]PASS" if outcome.passed else ("[red]FAIL" if blocking else "[yellow]WARN")
        gates.add_row(name, "ERROR" if blocking else "WARN", verdict, outcome.description)
    console.print(gates)


def print_gate(console: Console, gate: GateReport | None, note: str | None) -> None:
    """The regression gate: one line per check, then the items that got worse."""
    if gate is None:
        console.print(f"Regression gate: {note}")
        return
    table = Table(title=f"Regression gate vs baseline run {gate.baseline_run_id}")
    for column in ("check", "result", "details"):
        table.add_column(column)
    colours = {"pass": "[green]PASS", "warn": "[yellow]WARN", "fail": "[red]FAIL"}
    for check in gate.checks:
        table.add_row(check.name, colours[check.outcome], check.description)
    console.print(table)
    worse = [w for c in gate.checks for w in c.worse_items]
    if worse:
        items = Table(title="Items that got worse (primary metric)")
        for column in ("item", "baseline", "candidate"):
            items.add_column(column)
        for w in worse:
            items.add_row(w["item_id"], f"{w['baseline']:.3f}", f"{w['candidate']:.3f}")
        console.print(items)


def _slice_table(title: str, rows: dict[str, dict[str, Any]]) -> Table:
    columns = sorted({c for r in rows.values() for c in r if c != "n"})
    table = Table(title=f"By {title}")
    table.add_column(title)
    table.add_column("n", justify="right")
    for c in columns:
        table.add_column(c, justify="right")
    for key, row in rows.items():
        table.add_row(key, str(row["n"]), *(_pct(row.get(c)) for c in columns))
    return table


def _pct(value: Any) -> str:
    return "–" if value is None else f"{float(value):.1%}"
