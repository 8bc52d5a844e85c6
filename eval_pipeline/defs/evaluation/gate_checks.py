"""The regression gate as asset checks on eval_summary (ERROR on fail, WARN on warn)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, MetadataValue

from eval_pipeline.core.cases import GoldenCase
from eval_pipeline.core.gate import GATE_CHECKS, GateReport, gate_against_baseline
from eval_pipeline.core.records import RunRecord
from eval_pipeline.core.results_store import ResultsStore
from eval_pipeline.core.suite import Suite
from eval_pipeline.defs.evaluation.metadata import rows_markdown
from eval_pipeline.integrations.prompt_registry import PromptRegistry, RegistryUnavailable

GATE_CHECK_SPECS = [
    AssetCheckSpec(name, asset="eval_summary", blocking=name != "category_deltas")
    for name in GATE_CHECKS
]


def baseline_version(registry: PromptRegistry, suite: Suite) -> str | None:
    """The partition key (vN) the suite's baseline label points to, None if unset."""
    label = suite.thresholds.regression.baseline_label
    version = registry.label_versions([label]).get(suite.prompt_name, {}).get(label)
    return None if version is None else f"v{version}"


def run_gate(
    store: ResultsStore,
    run: RunRecord,
    suite: Suite,
    cases: Sequence[GoldenCase],
    registry: PromptRegistry,
) -> tuple[GateReport | None, str]:
    """The gate report, or None and the reason there is nothing to compare with."""
    label = suite.thresholds.regression.baseline_label
    try:
        version = baseline_version(registry, suite)
    except RegistryUnavailable as exc:
        return None, f"baseline unknown: prompt registry unavailable ({exc})"
    if version is None:
        return None, f"no baseline: prompt {suite.prompt_name} has no {label!r} label"
    categories = {c.id: c.category for c in cases}
    report = gate_against_baseline(store, run, version, suite.thresholds, categories)
    if report is None:
        return None, f"no baseline yet: no complete full-tier run of {label} ({version})"
    return report, ""


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
