"""Production traces: production_traces[day × suite] → trace_scores → golden_candidates and
production_failures.

A reproducible sample of a day's traces of each suite's agent (Langfuse or local JSONL),
scored with the suite's reference-free evaluators; the worst and most novel become
candidate golden cases in a review file a person can promote into the dataset.
"""

from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetOut,
    AssetRecordsFilter,
    AssetsDefinition,
    Config,
    Failure,
    MetadataValue,
    MultiPartitionKey,
    Output,
    asset,
    multi_asset,
)

from eval_pipeline import settings
from eval_pipeline.core.scoring.apply import values_by_evaluator
from eval_pipeline.core.scoring.checks import CheckOutcome
from eval_pipeline.core.scoring.summary import md_escape
from eval_pipeline.core.store.records import ItemScore
from eval_pipeline.core.suites.cases import content_hash
from eval_pipeline.core.traces.candidates import select_candidates, write_review_file
from eval_pipeline.core.traces.daily_checks import MIN_DAYS, DayStats, check_drop, check_floors
from eval_pipeline.core.traces.observations import TraceRecord, score_traces
from eval_pipeline.core.traces.rerun import failure_cases, lineage, write_failures
from eval_pipeline.core.traces.sampling import SamplingConfig, sample
from eval_pipeline.defs.evaluation.asset_checks import CheckedPartition, check_result
from eval_pipeline.defs.partitions import (
    Partitions,
    partitioned_check,
    plotted_per_suite,
    unplotted,
)
from eval_pipeline.defs.resources import ResultsStoreResource, ServicesResource, SuitesResource
from eval_pipeline.integrations import langfuse_scores

GROUP = "production"
PROGRESS_EVERY = 10_000
TRACE_SCORES_DESCRIPTION = (
    "Reference-free scores of the sampled traces (hallucinated items, tool protocol, errors, "
    "latency, cost), written back onto the traces in Langfuse, and checked against the "
    "suite's `traces:` thresholds."
)
TRACE_CHECKS = {
    "trace_floors": "Each reference-free metric's mean over the day's sampled traces is at "
    "least its floor (`traces.floors`). Warns, or fails with `traces.severity: error`.",
    "trace_drop": "No metric is clearly below the previous days: lower than all their traces "
    "pooled (up to `traces.days` back) by at least `traces.drop_margin`, with Welch's "
    f"one-sided p < `traces.alpha`. Needs {MIN_DAYS} previous days of scores.",
}


def previous_days(
    context: AssetExecutionContext, day: date, suite: str, days: int
) -> list[dict[str, DayStats]]:
    """The metric statistics trace_scores recorded for the ``days`` days before ``day``."""
    keys = [str(MultiPartitionKey({"day": (day - timedelta(days=k)).isoformat(), "suite": suite}))
            for k in range(1, days + 1)]  # fmt: skip
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("trace_scores"), asset_partitions=keys),
        limit=10 * days,
    ).records
    latest: dict[str, dict[str, Any]] = {}
    for record in records:  # newest first: the first seen per partition is its latest
        materialization = record.asset_materialization
        if materialization and materialization.partition not in latest:
            values = {k: v.value for k, v in materialization.metadata.items()}
            latest[materialization.partition] = unplotted(suite, values)
    found = []
    for meta in latest.values():  # (days before trace_scores recorded sd_/n_ have no n)
        metrics = [key.removeprefix("mean_") for key in meta if key.startswith("mean_")]
        found.append({
            m: DayStats(float(meta[f"mean_{m}"]), float(meta.get(f"sd_{m}", 0.0)),
                        int(meta.get(f"n_{m}", 0)))
            for m in metrics
        })  # fmt: skip
    return found


def trace_numbers(outcome: CheckOutcome) -> dict[str, float]:
    """Each metric's numbers under labels naming it."""
    numbers: dict[str, float] = {}
    for row in outcome.rows:
        cells = row.cells()
        for key in ("mean", "floor", "today", "previous", "delta", "p_value"):
            value = cells.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                numbers[f"{cells['metric']} {key.replace('_', ' ')}"] = value
    return numbers


class TraceSamplingConfig(Config):
    """Same day + same settings = same sample (hash of the trace id, see core/sampling.py)."""

    rate: float = 1.0
    cap: int | None = 200
    stratify_by: str | None = "metadata.category"
    salt: str = ""


class CandidatesConfig(Config):
    limit: int = 20
    min_novelty: float = 0.5
    review_dir: str = ""  # default: $EVAL_HOME/review


def _keys(context: AssetExecutionContext) -> tuple[date, str]:
    key = context.partition_key
    assert isinstance(key, MultiPartitionKey), "trace assets are day × suite"
    return date.fromisoformat(key.keys_by_dimension["day"]), key.keys_by_dimension["suite"]


def _counted(records: Iterable[TraceRecord], counts: Counter, log: Any) -> Iterator[TraceRecord]:
    for record in records:
        counts["read"] += 1
        counts["with_notes"] += bool(record.notes)
        if counts["read"] % PROGRESS_EVERY == 0:
            log.info(f"{counts['read']} traces read")
        yield record


def build_trace_assets(partitions: Partitions) -> list[AssetsDefinition]:
    @asset(group_name=GROUP, partitions_def=partitions.traces)
    def production_traces(
        context: AssetExecutionContext,
        config: TraceSamplingConfig,
        suites: SuitesResource,
        services: ServicesResource,
    ) -> Output[list[TraceRecord]]:
        """A reproducible sample of the day's root traces of the suite's production agent."""
        day, suite_name = _keys(context)
        suite = suites.get(suite_name)
        if not suite.trace_name:  # an unnamed root would match every trace in Langfuse
            return Output(
                [],
                metadata=plotted_per_suite(
                    suite_name,
                    {
                        "traces_read": 0,
                        "traces_sampled": 0,
                        "note": f"suite {suite_name} has no production trace name",
                    },
                ),
            )
        source = services.get().trace_source()
        sampling = SamplingConfig(config.rate, config.cap, config.stratify_by, config.salt)
        counts: Counter[str] = Counter()
        stream = source.traces(suite, day)
        sampled = sample(_counted(stream, counts, context.log), sampling)
        strata = (
            Counter(str(r.lookup(config.stratify_by)) for r in sampled)
            if config.stratify_by
            else {}
        )
        rows = "\n".join(f"| {md_escape(k)} | {v} |" for k, v in sorted(strata.items()))
        return Output(
            sampled,
            metadata=plotted_per_suite(
                suite_name,
                {
                    "source": source.description,
                    "trace_name": suite.trace_name,
                    "traces_read": counts["read"],
                    "traces_sampled": len(sampled),
                    "traces_with_notes": counts["with_notes"],
                    "sample_hash": content_hash(sorted(r.trace_id for r in sampled)),
                    "sampling": f"rate {config.rate}, cap {config.cap}, by {config.stratify_by}",
                    "by_stratum": MetadataValue.md("| stratum | traces |\n|---|---:|\n" + rows),
                },
            ),
        )

    @multi_asset(
        outs={"trace_scores": AssetOut(group_name=GROUP, description=TRACE_SCORES_DESCRIPTION)},
        check_specs=[
            partitioned_check(name, "trace_scores", text, partitions.traces)
            for name, text in TRACE_CHECKS.items()
        ],
        partitions_def=partitions.traces,
        can_subset=True,  # a check with nothing to test yields no result: shown skipped
    )  # fmt: skip
    def trace_scores(
        context: AssetExecutionContext,
        production_traces: list[TraceRecord],
        suites: SuitesResource,
        services: ServicesResource,
        results_store: ResultsStoreResource,
    ):
        day, suite_name = _keys(context)
        suite = suites.get(suite_name)
        scores = score_traces(production_traces, suite.trace_evaluators)
        metadata: dict[str, Any] = {"traces": len(production_traces), "scores": len(scores)}
        today = {name: DayStats.of(values)
                 for name, values in sorted(values_by_evaluator(scores).items())}  # fmt: skip
        for name, day_stats in today.items():
            metadata[f"mean_{name}"] = round(day_stats.mean, 4)
            metadata[f"sd_{name}"] = round(day_stats.sd, 4)
            metadata[f"n_{name}"] = day_stats.n
            metadata[f"failing_{name}"] = sum(s.value is not None and s.value < 1.0
                                              for s in scores if s.evaluator == name)  # fmt: skip
        report = services.get().write_back(  # the traces came from Langfuse: score them there
            results_store.open(), langfuse_scores.trace_score_payloads(
                scores, {t.trace_id: t.environment for t in production_traces})
        )  # fmt: skip
        if report is not None:
            metadata |= report.metadata()
        config = suite.thresholds.traces
        previous = previous_days(context, day, suite_name, config.days)
        outcomes = {"trace_floors": check_floors(today, config),
                    "trace_drop": check_drop(today, previous, config)}  # fmt: skip
        partition = CheckedPartition(suite_name, str(day))
        untested = {k: o.description for k, o in outcomes.items() if not o.tested}
        if untested:
            metadata["checks_not_tested"] = MetadataValue.md(
                "\n".join(f"- **{k}**: {md_escape(v)}" for k, v in untested.items())
            )
        yield Output(scores, output_name="trace_scores",
                     metadata=plotted_per_suite(suite_name, metadata))  # fmt: skip
        selected = {key.name for key in context.selected_asset_check_keys}
        blocking = config.severity == "error"
        for name, outcome in outcomes.items():
            if name not in selected:
                continue
            if not outcome.tested:  # (no result: "Skipped"; checks_not_tested says why)
                continue
            yield check_result("trace_scores", name, outcome.label(blocking),
                               outcome.description, partition,
                               trace_numbers(outcome), outcome.rows)  # fmt: skip
        failing = [f"- {k}: {o.description}" for k, o in outcomes.items() if not o.passed]
        if blocking and failing:
            raise Failure(description=f"{partition}: production traces below their "
                          "thresholds\n" + "\n".join(failing), allow_retries=False)  # fmt: skip

    @asset(group_name=GROUP, partitions_def=partitions.traces)
    def golden_candidates(
        context: AssetExecutionContext,
        config: CandidatesConfig,
        production_traces: list[TraceRecord],
        trace_scores: list[ItemScore],
        suites: SuitesResource,
    ) -> Output[str]:
        """The worst and most novel sampled traces as a review file in the golden-case format."""
        day, suite_name = _keys(context)
        suite = suites.get(suite_name)
        existing = [c.input for c in suite.load_cases()]
        candidates = select_candidates(
            production_traces,
            trace_scores,
            existing,
            limit=config.limit,
            min_novelty=config.min_novelty,
        )
        folder = Path(config.review_dir) if config.review_dir else settings.eval_home() / "review"
        path = write_review_file(folder / suite_name / f"{day}.yaml", suite_name, candidates)
        reasons = Counter(c.reason for c in candidates)
        lines = [
            f"| {c.reason} | {c.mean_score:.2f} | {c.novelty:.2f} | "
            f"{md_escape(str(c.trace.input))[:120]} |"
            for c in candidates
        ]
        table = "| reason | mean score | novelty | input |\n|---|---:|---:|---|\n" + "\n".join(
            lines
        )
        return Output(
            str(path),
            metadata=plotted_per_suite(
                suite_name,
                {
                    "review_file": MetadataValue.path(str(path)),
                    "candidates": len(candidates),
                    "worst": reasons["worst"],
                    "novel": reasons["novel"],
                    "with_user_correction": sum(
                        "corrected_items" in (c.trace.metadata.get("user_feedback") or {})
                        for c in candidates
                    ),
                    "preview": MetadataValue.md(table),
                },
            ),
        )

    @asset(group_name=GROUP, partitions_def=partitions.traces)
    def production_failures(
        context: AssetExecutionContext,
        production_traces: list[TraceRecord],
        trace_scores: list[ItemScore],
    ) -> Output[str]:
        """The day's sampled traces that failed a reference-free evaluator or that the user
        corrected, as teacher-forced cases (trace ids kept) for the next candidate to run again
        (`failure_rerun` in eval_job)."""
        day, suite_name = _keys(context)
        cases = failure_cases(production_traces, trace_scores, day)
        path = write_failures(settings.failures_dir(suite_name) / f"{day}.yaml", suite_name, cases)
        traced = [lineage(c) for c in cases]
        reasons = Counter(r for _, failed in traced for r in failed)
        rows = "\n".join(
            f"| {trace_id} | {', '.join(failed)} |" for trace_id, failed in traced[:50]
        )
        return Output(str(path), metadata=plotted_per_suite(suite_name, {
            "failures": len(cases), "of_traces": len(production_traces),
            **{f"failed_{k}": v for k, v in sorted(reasons.items())},
            "failures_file": MetadataValue.path(str(path)),
            "traces": MetadataValue.md("| trace id | failed |\n|---|---|\n" + rows),
        }))  # fmt: skip

    return [production_traces, trace_scores, golden_candidates, production_failures]
