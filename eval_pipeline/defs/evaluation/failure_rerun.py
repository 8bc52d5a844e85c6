"""`failure_rerun[suite × version]`: the version under evaluation runs the newest day of
production failures again (`production_failures`, core/traces/rerun.py), a run request the
run service sequences in this step (`RunRequest.failures`, `service.run_in_process`, as
the CLI runs one). Part of eval_job,
so the sensor's run for a staging version says how many of yesterday's failures it fixes.
With Langfuse, each original trace gets an `eval_rerun_fixed_<version>` score (lineage)."""

from collections.abc import Iterator
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetOut,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)

from eval_pipeline import service, settings
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.prompts.labels import parse_version_key
from eval_pipeline.core.reports.charts import fit_inline
from eval_pipeline.core.scoring.summary import md_escape
from eval_pipeline.core.traces.rerun import RerunReport, latest_failures, rerun_report
from eval_pipeline.defs.evaluation.asset_checks import CheckedPartition, check_result, not_tested
from eval_pipeline.defs.evaluation.outputs import partition_keys
from eval_pipeline.defs.partitions import Partitions, partitioned_check, plotted_per_suite
from eval_pipeline.defs.resources import (
    LLMResource,
    ResultsStoreResource,
    ServicesResource,
    environment,
)
from eval_pipeline.service import RunRequest

ASSET = "failure_rerun"
CHECK = "rerun_fixes"
ASSET_DESCRIPTION = (
    "This version on the newest day's production failures: how many it fixes and how many "
    "still fail, per trace id."
)
DESCRIPTION = (
    "Warns while some of the newest day's production failures (failed a reference-free "
    "evaluator, or corrected by the user) still fail with this version: a failure is fixed "
    "when every evaluator it failed now scores 1.0 (the primary metric against the user's "
    "correction). Not tested when there are no production failures to run again."
)


def build_failure_rerun(partitions: Partitions, group: str) -> AssetsDefinition:
    @multi_asset(
        outs={ASSET: AssetOut(group_name=group, description=ASSET_DESCRIPTION)},
        check_specs=[partitioned_check(CHECK, ASSET, DESCRIPTION, partitions.evals)],
        partitions_def=partitions.evals,
        can_subset=True,
        pool="llm",
    )
    def failure_rerun(
        context: AssetExecutionContext,
        services: ServicesResource,
        llm: LLMResource,
        results_store: ResultsStoreResource,
    ) -> Iterator[Any]:
        suite_name, version_key = partition_keys(context)
        path, cases = latest_failures(settings.failures_dir(suite_name))
        if path is None or not cases:  # (no file: no cases)
            why = ("no production failures to run again (production_failures has not run for "
                   "this suite, or found none)")  # fmt: skip
            yield MaterializeResult(asset_key=ASSET, metadata=plotted_per_suite(
                suite_name, {"rerun": 0, "note": why, "checks_not_tested": MetadataValue.md(
                    f"- **{CHECK}**: {md_escape(not_tested(why))}")}))  # fmt: skip
            return  # (rerun_fixes tested nothing: no result, "Skipped" in the UI)
        env = environment(services, llm, results_store)
        request = RunRequest(suite_name, RunOptions(shards=1),
                             parse_version_key(version_key) or None,
                             run_id=f"{suite_name}-{version_key}-failures-{context.run.run_id[:12]}",
                             dagster_run_id=context.run.run_id,
                             failures=tuple(cases))  # fmt: skip
        finished = service.run_in_process(service.prepare(env, request))  # (one step)
        result, written = finished.result, finished.writeback
        report = rerun_report(result.cases, result.outputs, result.scores)
        partition = CheckedPartition(suite_name, version_key)
        metadata: dict[str, Any] = {
            "rerun": len(report.rows), "fixed": report.fixed,
            "still_failing": report.still_failing, "failures_file": MetadataValue.path(str(path)),
            "traces": MetadataValue.md(_table(report)),
            "langfuse": env.services.description, "run_id": result.run.run_id,
        }  # fmt: skip
        if written is not None:
            metadata |= written.metadata()
        context.log.info(f"{partition}: {report.line()}")
        yield MaterializeResult(asset_key=ASSET, metadata=plotted_per_suite(suite_name, metadata))
        if CHECK in {k.name for k in context.selected_asset_check_keys}:
            label = "PASS" if not report.still_failing else "WARN"
            numbers = {"fixed": report.fixed, "still_failing": report.still_failing,
                       "rerun": len(report.rows)}  # fmt: skip
            yield check_result(ASSET, CHECK, label, f"{report.line()} (from {path.name})",
                               partition, numbers, [])  # fmt: skip

    return failure_rerun


def _table(report: RerunReport) -> str:
    """Still-failing traces first; as many rows as Dagster shows inline."""
    header = "| trace id | failed in production | with this version |\n|---|---|---|\n"
    rows = [
        f"| {r.trace_id} | {', '.join(r.failed_in_production)} | "
        f"{'fixed' if r.fixed else (r.error or 'fails: ' + ', '.join(r.still_failing))[:60]} |\n"
        for r in sorted(report.rows, key=lambda r: r.fixed)
    ]
    return fit_inline(header, rows, keep="first", more="in the failures file")
