"""Evaluation assets: golden_dataset[suite] → agent_run_outputs → item_scores → eval_summary.

Asset bodies stay thin: they drive the run service (eval_pipeline/service, the one the CLI
drives), then attach metadata. Results live in the results store; the steps pass a run
reference along (``RunRef``: the run's pinned request and the cases its plan loaded, so a
run reads its cases once). plan_shards reads the golden cases from the dataset files
themselves (golden_dataset is lineage and validation, not a data input), so a sensor- or
schedule-triggered run works even if golden_dataset was never materialized, and evaluates
the files as they are.
"""

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dagster import (
    AllPartitionMapping,
    AssetCheckResult,
    AssetExecutionContext,
    AssetIn,
    AssetOut,
    AssetsDefinition,
    AssetSpec,
    BetaWarning,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    Nothing,
    Output,
    asset,
    multi_asset,
)

from eval_pipeline import service
from eval_pipeline.core.errors import explanation_failed
from eval_pipeline.core.evaluation import Verdict
from eval_pipeline.core.reports.result_file import ResultFile
from eval_pipeline.core.reports.verdict_table import latest_verdicts, verdicts_markdown
from eval_pipeline.core.scoring.apply import values_by_evaluator
from eval_pipeline.core.scoring.checks import absence_coverage as absence
from eval_pipeline.core.scoring.summary import JudgeSpending, markdown_table, md_escape
from eval_pipeline.core.suites.cases import GoldenCase, dataset_version
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.defs.evaluation.asset_checks import (
    CheckedPartition,
    check_result,
    check_results,
    check_specs,
    not_tested,
    verdict_message,
)
from eval_pipeline.defs.evaluation.execution import not_to_be_retried
from eval_pipeline.defs.evaluation.metadata import (
    dataset_metadata,
    errors_metadata,
    steps_metadata,
    summary_pictures,
    tools_metadata,
    verdicts_table,
)
from eval_pipeline.defs.evaluation.outputs import build_agent_run_outputs
from eval_pipeline.defs.evaluation.run_tags import tag_verdict
from eval_pipeline.defs.partitions import Partitions, partitioned_check, plotted_per_suite
from eval_pipeline.defs.resources import (
    LLMResource,
    ResultsStoreResource,
    ServicesResource,
    SuitesResource,
    environment,
)
from eval_pipeline.integrations import langfuse_datasets
from eval_pipeline.service import RunRef

GROUP = "evaluation"
SUMMARY_DESCRIPTION = (
    "Aggregate the run, mark it complete, write its scores back to Langfuse, then judge it: "
    "the suite's thresholds and, item by item, the regression gate against its baseline run "
    "(core/scoring/gate.py). Its checks are the verdict: ✓ PASS, ✗ FAIL, ⚠ UNDECIDED (or a "
    "warning), skipped: not tested; the run's `eval/verdict` tag says it for the run."
)
# Each evaluation (suite/version) reads its suite's cases. Dagster 1.13 has no built-in
# mapping from a key "drive_thru/v3" to the suite partition "drive_thru", and custom
# mappings are deprecated (partitions/utils/mapping.py), so the edge is drawn from every
# suite; golden_dataset's data version is its cases' content hash, so an evaluation shows
# as unsynced only when some suite's cases changed, not on every re-materialization.
GOLDEN_OF_EVAL = AllPartitionMapping()


@dataclass(frozen=True)
class EvaluationAssets:
    golden_dataset: AssetsDefinition
    langfuse_dataset: AssetsDefinition
    agent_run_outputs: AssetsDefinition
    item_scores: AssetsDefinition
    eval_summary: AssetsDefinition

    @property
    def evaluation(self) -> list[AssetsDefinition]:
        """The three assets of one evaluation run (eval_job)."""
        return [self.agent_run_outputs, self.item_scores, self.eval_summary]


GOLDEN_DESCRIPTION = (
    "The suite's golden cases, validated (a bad file fails here, before any LLM call); from "
    "its folder, or from Langfuse for `dataset: langfuse:…` (`dataset_source`)."
)
DATASET_VALID = ("Blocks. Every case file of the suite parses and every case is valid: its "
                 "fields, its category, and the fields its evaluators read.")  # fmt: skip
GOLDEN_CHECKS = {"dataset_valid": DATASET_VALID, "absence_coverage": absence.DESCRIPTION}


def golden_dataset_checks(suite: Suite, cases: Sequence[GoldenCase]) -> Iterator[AssetCheckResult]:
    """dataset_valid (reached only when the cases loaded), and absence_coverage as the
    registered check decides it (core/scoring/checks/absence_coverage.py; every run's
    verdict checks it too): for a suite that declares no absence categories it tested
    nothing, so it gets no result ("Skipped", as eval_summary's untested checks), never a
    pass with a share of 0."""
    partition = CheckedPartition(suite.name)
    yield check_result("golden_dataset", "dataset_valid", "PASS", f"{len(cases)} valid cases",
                       partition, {"cases": len(cases),
                                   "dataset_version": dataset_version(cases)}, [])  # fmt: skip
    found = absence.coverage(cases, suite.absence_categories)
    if found is None:
        return
    yield check_result(
        "golden_dataset", "absence_coverage", "PASS" if found.passed else "FAIL", found.line(),
        partition, {"share_expecting_nothing": found.share,
                    "missing_absence_categories": ", ".join(found.missing) or "none"}, [],
    )  # fmt: skip


def build_evaluation_assets(partitions: Partitions) -> EvaluationAssets:
    @multi_asset(
        outs={"golden_dataset": AssetOut(group_name=GROUP, description=GOLDEN_DESCRIPTION)},
        partitions_def=partitions.suites,
        # absence_coverage blocks every run's verdict (as eval_summary's checks, not in
        # Dagster's sense: a suite without absence categories gives it no result)
        check_specs=[
            partitioned_check(
                name, "golden_dataset", text, partitions.suites, blocking=name == "dataset_valid"
            )
            for name, text in GOLDEN_CHECKS.items()
        ],
        can_subset=True,  # a check that tested nothing yields no result: shown skipped
    )
    def golden_dataset(context: AssetExecutionContext, services: ServicesResource):
        suite = services.suite(context.partition_key)
        cases = suite.load_cases()
        metadata = dataset_metadata(suite, cases)
        if not suite.absence_categories:
            metadata["checks_not_tested"] = MetadataValue.md(
                f"- **absence_coverage**: {md_escape(not_tested(absence.NOT_DECLARED))}")
        with warnings.catch_warnings():  # beta in Dagster 1.13, and what the mapping needs
            warnings.simplefilter("ignore", BetaWarning)
            version = DataVersion(dataset_version(cases))
            yield Output(cases, output_name="golden_dataset", metadata=metadata,
                         data_version=version)  # fmt: skip
        selected = {key.name for key in context.selected_asset_check_keys}
        yield from (c for c in golden_dataset_checks(suite, cases) if c.check_name in selected)

    @asset(group_name=GROUP, partitions_def=partitions.suites, deps=[golden_dataset])
    def langfuse_dataset(
        context: AssetExecutionContext, suites: SuitesResource, services: ServicesResource
    ) -> MaterializeResult:
        """The golden cases mirrored into the Langfuse dataset eval-pipeline/<suite> (upsert
        by deterministic item id, removed cases archived). A no-op, said so, without Langfuse
        and for a suite whose cases come from a Langfuse dataset."""
        found = services.get()
        client = found.client()
        if client is None:
            return MaterializeResult(metadata={"langfuse": found.description, "synced": False})
        suite = suites.get(context.partition_key)
        if suite.dataset_ref is not None:  # the team's own dataset is the source
            return MaterializeResult(metadata={
                "langfuse": found.description, "synced": False,
                "dataset_source": suite.dataset_origin,
            })  # fmt: skip
        report = langfuse_datasets.sync_dataset(client, suite.name, suite.load_cases())
        metadata: dict[str, Any] = {"langfuse": found.description, "synced": True,
                                    "dataset": report.dataset,
                    "dataset_version": report.dataset_version, **report.counts()}  # fmt: skip
        return MaterializeResult(metadata=metadata)

    golden_dataset_in = AssetIn(golden_dataset.key, partition_mapping=GOLDEN_OF_EVAL,
                                dagster_type=Nothing)  # fmt: skip
    agent_run_outputs = build_agent_run_outputs(partitions.evals, golden_dataset_in, GROUP)

    @asset(group_name=GROUP, partitions_def=partitions.evals)
    def item_scores(
        context: AssetExecutionContext,
        agent_run_outputs: RunRef,
        services: ServicesResource,
        results_store: ResultsStoreResource,
        llm: LLMResource,
    ) -> Output[RunRef]:
        """Score every recorded output with the suite's item evaluators; LLM judges run
        through the runner under the run's concurrency, rate and timeout (as in the CLI),
        their cost counted apart."""
        prepared = service.replan(environment(services, llm, results_store), agent_run_outputs)
        scores = service.score(prepared)
        means = values_by_evaluator(scores)
        spent = JudgeSpending.of(scores)
        metadata: dict[str, Any] = {"run_id": prepared.run_id, "scores": len(scores)}
        if spent.calls:
            metadata |= {"judge_calls": spent.calls, "judge_cost_usd": spent.cost_usd,
                         "judge_input_tokens": spent.tokens.input,
                         "judge_output_tokens": spent.tokens.output}  # fmt: skip
        metadata |= {f"mean_{k}": round(sum(v) / len(v), 4) for k, v in means.items()}
        return Output(agent_run_outputs, metadata=plotted_per_suite(prepared.suite.name, metadata))

    @multi_asset(
        specs=[AssetSpec("eval_summary", group_name=GROUP, partitions_def=partitions.evals,
                         deps=["item_scores"], description=SUMMARY_DESCRIPTION)],
        check_specs=check_specs(partitions.evals),
        partitions_def=partitions.evals,
        ins={"item_scores": AssetIn("item_scores")},
        can_subset=True,
    )  # fmt: skip
    def eval_summary(
        context: AssetExecutionContext,
        item_scores: RunRef,
        results_store: ResultsStoreResource,
        services: ServicesResource,
        llm: LLMResource,
    ):
        prepared = service.replan(environment(services, llm, results_store), item_scores)
        finished = service.finish(prepared, service.conclude(prepared))
        result, report = finished.result, finished.writeback
        store, suite, run_id = prepared.store, prepared.suite, prepared.run_id
        run, cases, summary = result.run, list(result.cases), result.summary
        if result.sequential:
            context.log.info(f"{run_id}: sequential gate {result.sequential.line()}")
        writeback: dict[str, Any] = {"langfuse": prepared.env.services.description}
        if report is not None:  # (never fails the evaluation)
            writeback |= report.metadata()
            if report.queued or report.set_aside:
                context.log.warning(f"Langfuse write-back incomplete: {report.line()}")
        partition = CheckedPartition(run.suite, run.prompt_version)
        view = ResultFile.of(result)  # what every surface renders (core/reports/result_file.py)
        checks, not_tested = check_results(view, partition)
        try:  # (pictures explain a verdict, never decide it)
            pictures = summary_pictures(store, result, suite)
            pictures |= tools_metadata(store, run, cases) | steps_metadata(store, run)
        except Exception as exc:
            result.warnings.append(explanation_failed("the summary's charts and tables", exc))
            context.log.warning(result.warnings[-1])
            pictures = {}
        if result.warnings:
            lines = "\n".join(f"- {md_escape(w)}" for w in result.warnings)
            pictures["warnings"] = MetadataValue.md(lines)
        if not_tested:
            lines = "\n".join(f"- **{k}**: {md_escape(v)}" for k, v in not_tested.items())
            pictures["checks_not_tested"] = MetadataValue.md(lines)
        # Which suite and version passed, every one, not one check at a time: the table
        # follows the verdict, so the asset's Overview opens on it (the latest run's copy)
        verdicts = latest_verdicts(store)
        pictures["verdicts_with_run_links"] = MetadataValue.md(verdicts_markdown(verdicts))
        if result.gate is not None and result.gate.notes:
            pictures["gate_note"] = "; ".join(result.gate.notes)
        primary = summary.metric(suite.thresholds.primary_metric)
        yield MaterializeResult(
            asset_key="eval_summary",
            metadata=plotted_per_suite(
                run.suite,
                {
                    "verdict": view.verdict.value,  # (first: a partition's detail opens on it)
                    "verdicts": verdicts_table(verdicts),
                    **writeback,
                    "run_id": run_id,
                    "primary_metric": suite.thresholds.primary_metric,
                    "primary_value": primary if primary is not None else float("nan"),
                    **{f"mean_{k}": v for k, v in summary.metrics.items() if v is not None},
                    "errors": summary.n_errors,
                    "paused": summary.n_paused,
                    **errors_metadata(summary),
                    "by_category": MetadataValue.md(
                        markdown_table(summary.by_category, "category")
                    ),
                    "by_difficulty": MetadataValue.md(
                        markdown_table(summary.by_difficulty, "difficulty")
                    ),
                    "cost_usd": summary.cost_usd,
                    **(
                        {
                            "judge_cost_usd": summary.judge_cost_usd,
                            "judge_calls": summary.judge_calls,
                        }
                        if summary.judge_calls
                        else {}
                    ),
                    "gate": (result.gate_verdict.value if result.gate_verdict
                             else result.gate_note or ""),  # (PASS/FAIL/UNDECIDED/ERROR)
                    **(
                        {
                            "sequential": view.sequential,
                            "model_calls": view.sequential_run.model_calls,
                        }
                        if view.sequential_run
                        else {}
                    ),
                    **({"budget": run.stopped} if run.stopped else {}),
                    **pictures,
                },
            ),
        )
        selected = {key.name for key in context.selected_asset_check_keys}
        yield from (check for check in checks if check.check_name in selected)
        tag_verdict(context.instance, context.run.run_id, view.verdict.value)
        said = verdict_message(view, partition)
        if view.verdict is Verdict.ERROR:  # the agent could not be measured: the run failed
            not_to_be_retried(context)  # (its verdict is its answer)
            raise Failure(description=said, allow_retries=False,
                          metadata={"verdict": view.verdict.value, "run_id": run_id})  # fmt: skip
        # A verdict reached is the run's finding, not its failure: the run succeeds (its
        # untested checks show "Skipped", not "Execution failed") and says it in its log,
        # in the check's colours (an UNDECIDED that blocks says so in its words)
        log = {Verdict.FAIL: context.log.error, Verdict.UNDECIDED: context.log.warning}
        log.get(view.verdict, context.log.info)(said)

    return EvaluationAssets(golden_dataset, langfuse_dataset, agent_run_outputs, item_scores,
                            eval_summary)  # fmt: skip
