"""The regression gate as asset checks on eval_summary (ERROR on fail, WARN on warn)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, MetadataValue

from eval_pipeline.core.scoring.gate import GATE_CHECKS, GateReport
from eval_pipeline.defs.evaluation.metadata import rows_markdown

GATE_CHECK_SPECS = [
    AssetCheckSpec(name, asset="eval_summary", blocking=name != "category_deltas")
    for name in GATE_CHECKS
]


def gate_results(report: GateReport | None, reason: str) -> Iterator[AssetCheckResult]:
    if report is None:
        yield from _all(reason)
    else:
        yield from _report_results(report)


def _all(reason: str) -> Iterator[AssetCheckResult]:
    """Nothing to compare with: every gate check warns, saying why."""
    for name in GATE_CHECKS:
        yield AssetCheckResult(
            check_name=name, passed=False, severity=AssetCheckSeverity.WARN, description=reason
        )


def _report_results(report: GateReport) -> Iterator[AssetCheckResult]:
    for check in report.checks:
        metadata: dict[str, Any] = {"baseline_run_id": report.baseline_run_id or "none"}
        if check.rows:
            metadata["details"] = MetadataValue.md(rows_markdown(check.rows))
            first = check.rows[0]
            for key in ("delta", "ci_low", "ci_high", "p_holm", "mde", "n"):
                if isinstance(first.get(key), int | float):
                    metadata[key] = first[key]
        if check.worse_items:
            metadata["worse_items"] = MetadataValue.md(rows_markdown(check.worse_items))
        yield AssetCheckResult(
            check_name=check.name,
            passed=check.outcome == "pass",
            severity=AssetCheckSeverity.ERROR
            if check.outcome == "fail"
            else AssetCheckSeverity.WARN,
            description=check.description[:1000],
            metadata=metadata,
        )
