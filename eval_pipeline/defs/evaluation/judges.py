"""How far to trust the suite's LLM judges: `judge_calibration[suite]` grades the suite's
labelled set with each judge that has labels (core/analysis/calibration.py) and the
`judge_agreement` check warns when a judge agrees with people less than the floor."""

from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetOut,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)

from eval_pipeline.core.analysis.calibration import Calibration, calibrate, labelled_rubrics
from eval_pipeline.core.scoring.summary import md_escape
from eval_pipeline.defs.evaluation.asset_checks import CheckedPartition, check_result, not_tested
from eval_pipeline.defs.partitions import Partitions, partitioned_check
from eval_pipeline.defs.resources import SuitesResource

ASSET = "judge_calibration"
CHECK = "judge_agreement"
ASSET_DESCRIPTION = (
    "Each LLM judge of the suite that has labels in judge_labels.yaml, graded against "
    "people: accuracy and Cohen's kappa with a 95% CI, the judge's calls and cost."
)
DESCRIPTION = (
    "Warns when an LLM judge of the suite agrees with people less than the floor: Cohen's "
    "kappa on the suite's labelled set (judge_labels.yaml) below `judges.min_kappa` of its "
    "thresholds (or undefined). Not tested for a suite without labelled judges."
)


def build_judge_calibration(partitions: Partitions, group: str) -> AssetsDefinition:
    @multi_asset(
        outs={ASSET: AssetOut(group_name=group, description=ASSET_DESCRIPTION)},
        check_specs=[partitioned_check(CHECK, ASSET, DESCRIPTION, partitions.suites)],
        partitions_def=partitions.suites,
        can_subset=True,  # a suite without labelled judges yields no check result: skipped
    )
    def judge_calibration(context: AssetExecutionContext, suites: SuitesResource):
        suite = suites.get(context.partition_key)
        results = [calibrate(suite, rubric) for rubric in labelled_rubrics(suite)]
        metadata: dict[str, Any] = {"rubrics": len(results)}
        if results:
            metadata["agreement"] = MetadataValue.md(_table(results))
            metadata |= {f"{r.rubric} kappa": r.agreement.kappa for r in results
                         if r.agreement.kappa is not None}  # fmt: skip
            metadata["judge_calls"] = sum(r.judge_calls for r in results)
            metadata["judge_cost_usd"] = sum(r.judge_cost_usd for r in results)
        if not results:  # (judge_agreement tested nothing: no result, "Skipped" in the UI)
            metadata["checks_not_tested"] = MetadataValue.md(f"- **{CHECK}**: " + not_tested(
                "the suite has no labelled rubric to calibrate its judges on"))  # fmt: skip
        yield MaterializeResult(asset_key=ASSET, metadata=metadata)
        if not results or CHECK not in {k.name for k in context.selected_asset_check_keys}:
            return
        low = [r for r in results if r.below_floor]
        agreement = "; ".join(f"{r.rubric}: {r.agreement.line()}" for r in results)
        if low:
            agreement = (f"below kappa {results[0].min_kappa:g}: "
                         f"{', '.join(r.rubric for r in low)}; {agreement}")  # fmt: skip
        yield check_result(ASSET, CHECK, "WARN" if low else "PASS", agreement,
                           CheckedPartition(context.partition_key),
                           {"below_floor": ", ".join(r.rubric for r in low) or "none"},
                           [], tables={"details": _table(results)})  # fmt: skip

    return judge_calibration


def _table(results: list[Calibration]) -> str:
    rows = ["| judge | n | accuracy | kappa | 95% CI | calls |", "|---|---:|---:|---:|---|---:|"]
    for r in results:
        a = r.agreement
        kappa = "–" if a.kappa is None else f"{a.kappa:.3f}"
        ci = "–" if a.kappa is None else f"[{a.kappa_low:.3f}, {a.kappa_high:.3f}]"
        rows.append(f"| {md_escape(r.rubric)} | {a.n} | {a.accuracy:.3f} | {kappa} | {ci} "
                    f"| {r.judge_calls} |")  # fmt: skip
    return "\n".join(rows)
