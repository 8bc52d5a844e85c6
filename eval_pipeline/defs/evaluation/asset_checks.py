"""The asset checks on eval_summary: the suite's thresholds and the regression gate.

What the Dagster UI shows of them is written for a reader:
- every check has a description saying what it tests and whether it blocks;
- checks are partitioned like the asset (suite × prompt version), and each result says
  which partition it judged;
- every number in a result's metadata is labelled with the metric or category it belongs
  to (``order_correctness Δ``, ``not_on_menu Δ``), never a bare ``delta`` from a first row;
- Dagster knows two outcomes, passed or failed (with a severity); the first word of each
  description says ours: "FAIL — …" (failed, ERROR), "WARN — …" (failed, WARN),
  "UNDECIDED — …" (failed; ERROR when ``on_undecided: fail``, else WARN), "N/A — not
  tested: …" (passed: a check that tested nothing — nothing configured, no baseline yet —
  is not a failure), or none (PASS). Every check of the asset gets a result in every run:
  a check left without one shows "Execution failed" in the UI. The materialization's
  ``checks_not_tested`` metadata lists the N/A ones, and the verdict view counts them as
  nothing (docs/dagster.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    MetadataValue,
    PartitionsDefinition,
)

from eval_pipeline.core.reports.result_file import ResultFile
from eval_pipeline.core.scoring import checks
from eval_pipeline.core.scoring.rows import Row
from eval_pipeline.core.store.records import Verdict
from eval_pipeline.defs.evaluation.metadata import rows_markdown
from eval_pipeline.defs.partitions import partitioned_check, plotted_per_suite

ASSET = "eval_summary"


@dataclass(frozen=True)
class CheckedPartition:
    """The partition a check result judged: its suite (the result's numbers are keyed by
    it, as the assets' are) and, for a suite × version or day × suite asset, the version or
    day; said ``drive_thru v2`` in descriptions."""

    suite: str
    part: str | None = None

    def __str__(self) -> str:
        return f"{self.suite} {self.part}" if self.part else self.suite


def check_specs(partitions_def: PartitionsDefinition) -> list[AssetCheckSpec]:
    """A Dagster check per registered check (core/scoring/checks): its name, description
    and whether it blocks, as declared there (a project's own included: its plugins are
    loaded with the project, before the definitions are built)."""
    return [
        partitioned_check(spec.name, ASSET, spec.description, partitions_def, spec.blocking)
        for spec in checks.checks()
    ]


def check_results(
    result: ResultFile, partition: CheckedPartition
) -> tuple[list[AssetCheckResult], dict]:
    """A result for every check: what the tested ones found, N/A for the others; and why
    the others did not test anything. Read from the run's view model (the results file),
    as every other surface."""
    done: list[AssetCheckResult] = [measured(result, partition)]
    skipped: dict[str, str] = {}
    ran = {check.name for check in result.checks}
    for spec in checks.checks("threshold"):
        if spec.name not in ran:  # (not asked for in this run, e.g. --threshold)
            skipped[spec.name] = "not asked for in this run"
    for check in result.checks:
        if not check.tested:
            skipped[check.name] = check.description
            continue
        done.append(check_result(ASSET, check.name, check.result, check.description, partition,
                                 check.numbers(), check.rows))  # fmt: skip
    gate = result.gate
    on_undecided = result.run.options.on_undecided
    for gated in gate.checks if gate else ():
        assert gate is not None  # (there are checks)
        if not gated.tested:
            skipped[gated.name] = gated.description
            continue
        numbers = {"baseline_run_id": gate.baseline_run_id or "none"} | gated.numbers()
        if gate.notes:
            numbers["note"] = "; ".join(gate.notes)
        description, tail = gated.description, ""
        declared = checks.spec(gated.name)
        said = result.sequential_run
        if said and declared and declared.undecided_on_warn:  # how far it went
            numbers |= {
                "decided": said.decided,
                "cases_run": said.cases,
                "suite_cases": said.suite_cases,
                "model_calls": said.model_calls,
            }
            if said.repeats_line:
                numbers["repeats"] = said.repeats_line
            tail = f" ({result.sequential})"  # (kept whole when the description is shortened)
        if result.run.stopped:
            numbers["budget"] = result.run.stopped
        if gated.undecided:
            description = f"(on_undecided: {on_undecided}) {description}"
        done.append(check_result(ASSET, gated.name, gated.severity, description, partition,
                                 numbers, gated.rows, gated.worse_items,
                                 blocks=on_undecided == "fail", tail=tail))  # fmt: skip
    if gate is None:
        for spec in checks.checks("gate"):
            skipped[spec.name] = result.gate_note or "no baseline"
    done += [check_result(ASSET, name, "N/A", not_tested(why), partition, {}, [])
             for name, why in skipped.items()]  # fmt: skip
    return done, skipped


def not_tested(why: str) -> str:
    """The description of a check that tested nothing: "not tested", and why."""
    return why if why.startswith("not tested") else f"not tested: {why}"


def measured(result: ResultFile, partition: CheckedPartition) -> AssetCheckResult:
    """items_measured: FAIL with why the run could not measure the agent, else PASS."""
    summary = result.summary
    numbers = {"items": summary.n_items, "items_failed": summary.n_errors,
               "scores_failed": summary.n_score_errors}  # fmt: skip
    if not result.errors:
        text = f"all {summary.n_items} items measured"
        if result.sequential_run and (paired := result.sequential_run.paired_line):
            text += f"; {paired}"  # (what the gate's "after N pairs" counts)
        return check_result(ASSET, "items_measured", "PASS", text, partition, numbers, [])
    return check_result(ASSET, "items_measured", "FAIL", "; ".join(result.errors), partition,
                        numbers, [])  # fmt: skip


def check_result(
    asset: str,
    name: str,
    label: str,
    description: str,
    partition: CheckedPartition,
    numbers: dict[str, Any],
    rows: Sequence[Row],
    worse: Sequence[Row] | None = None,
    *,
    blocks: bool = True,
    tail: str = "",
) -> AssetCheckResult:
    """A check's result: passed for PASS and N/A (it tested nothing); ERROR for FAIL, and
    for UNDECIDED when it ``blocks`` the run (``on_undecided: fail``); WARN otherwise.
    The numbers are keyed by the partition's suite (a check's plots run over all its
    partitions). Its description is the ``description`` and then the ``tail``, within
    DESCRIPTION_LIMIT (``shortened``)."""
    metadata: dict[str, Any] = {"partition": str(partition), "outcome": label,
                                **plotted_per_suite(partition.suite, numbers)}  # fmt: skip
    if rows:
        metadata["details"] = MetadataValue.md(rows_markdown(rows))
    if worse:
        metadata["worse_items"] = MetadataValue.md(rows_markdown(worse))
    text = f"{partition}: {description}"
    if label != "PASS":
        text = f"{label} — {text}"
    error = label == "FAIL" or (label == "UNDECIDED" and blocks)
    return AssetCheckResult(
        asset_key=asset, check_name=name, passed=label in ("PASS", "N/A"),
        severity=AssetCheckSeverity.ERROR if error else AssetCheckSeverity.WARN,
        description=shortened(text, DESCRIPTION_LIMIT - len(tail)) + tail, metadata=metadata,
    )  # fmt: skip


DESCRIPTION_LIMIT = 1000  # characters of a check result's description


def shortened(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut after its last whole "; "-part that fits,
    with " …" (cut at 1000 characters, a sequential gate's description of three metrics
    broke an interval, "[-0.577, +", and lost how far the gate went: the ``tail``)."""
    if len(text) <= limit:
        return text
    head = text[: max(0, limit - 2)]
    cut = head.rfind("; ")
    return (head[:cut] if cut > 0 else head.rsplit(" ", 1)[0]) + " …"


def failure_message(result: ResultFile, partition: CheckedPartition) -> str:
    """Why the run fails, with the numbers: for the run's failure in the Dagster UI."""
    failed = [*(["items_measured"] if result.errors else []), *result.failed]
    if result.verdict is Verdict.UNDECIDED:
        lines = [f"{partition}: UNDECIDED (on_undecided: fail) — the gate could not tell"]
        return "\n".join(lines + [f"- {why}" for why in result.undecided])
    lines = [f"{partition}: {result.verdict} — blocking checks failed: {', '.join(failed)}"]
    lines += [f"- items_measured: {why}" for why in result.errors]
    for check in result.checks:
        if check.blocking and not check.passed:
            lines.append(f"- {check.name}: {check.description}")
    for gated in result.gate.checks if result.gate else ():
        if gated.blocking_failure:
            lines.append(f"- {gated.name}: {gated.description}")
    # what the gate could not tell is said too: not a finding, and not to be read as one
    lines += [f"- undecided (not a regression found): {why}" for why in result.undecided]
    return "\n".join(lines)
