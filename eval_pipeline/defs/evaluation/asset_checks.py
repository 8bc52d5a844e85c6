"""The asset checks on eval_summary: the suite's thresholds and the regression gate.

What the Dagster UI shows of them is written for a reader:
- every check has a description saying what it tests and whether it blocks;
- checks are partitioned like the asset (suite × prompt version), and each result says
  which partition it judged;
- every number in a result's metadata is labelled with the metric or category it belongs
  to (``order_correctness Δ``, ``not_on_menu Δ``), never a bare ``delta`` from a first row;
- four looks, one per finding (``LOOKS``): PASS passed (green ✓); FAIL failed with ERROR
  (red ✗); UNDECIDED and a non-blocking WARN failed with WARN (yellow ⚠); a check that
  tested nothing (nothing configured, no baseline yet) gets no result at all, which Dagster
  shows as "Skipped" in a run that did not fail. So a verdict the gate reached never fails
  the Dagster run: a failed run turns every check it left without a result into "Execution
  failed" (docs/dagster.md). The materialization's ``checks_not_tested`` says why each
  untested check tested nothing;
- each description leads with the finding and the metric that decided it, with its Δ and
  interval, within DESCRIPTION_LIMIT; the whole text is in the metadata (``full_text``).
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

from eval_pipeline.core.reports.result_file import GateCheckResult, ResultFile
from eval_pipeline.core.scoring import checks
from eval_pipeline.core.scoring.rows import PairedRow, Row, backing_row
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
    """A Dagster check per registered check (core/scoring/checks): its name and
    description, as declared there (a project's own included: its plugins are loaded with
    the project, before the definitions are built). None is ``blocking`` in Dagster's
    sense: a blocking check that fails with ERROR fails the step, and a failed run shows
    every check it left without a result as "Execution failed", the untested ones
    included. Whether a check blocks is the verdict's (the run's ``eval/verdict`` tag, the
    CLI's exit code) and its description's first word."""
    return [
        partitioned_check(spec.name, ASSET, spec.description, partitions_def, blocking=False)
        for spec in checks.checks()
    ]


def check_results(
    result: ResultFile, partition: CheckedPartition
) -> tuple[list[AssetCheckResult], dict[str, str]]:
    """A result for every check that tested something; and why each of the others did
    not (they get no result: "Skipped"). Read from the run's view model (the results
    file), as every other surface."""
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
        tail = ""
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
        if gated.undecided:  # whether it blocks the run (exit 3) or only warns
            numbers["on_undecided"] = on_undecided
        done.append(check_result(ASSET, gated.name, gated.severity, gated.description,
                                 partition, numbers, gated.rows, gated.worse_items,
                                 lead=deciding(gated, result.primary_metric),
                                 tail=tail))  # fmt: skip
    if gate is None:
        for spec in checks.checks("gate"):
            skipped[spec.name] = result.gate_note or "no baseline"
    return done, skipped


def not_tested(why: str) -> str:
    """Why a check tested nothing: "not tested", and why."""
    return why if why.startswith("not tested") else f"not tested: {why}"


def deciding(gated: GateCheckResult, primary: str | None) -> str:
    """The metric that decided a gate check, with its Δ and interval ("tool_call_accuracy
    Δ -0.650 [-0.828, -0.022]"), as the verdict's own is chosen (rows.py ``backing_row``);
    "" when it compared none."""
    paired = [r for r in gated.rows if isinstance(r, PairedRow)]
    # (rows that warn: a metric it could not decide, or a category that got worse)
    flagged = [r for r in paired if r.outcome == "warn"] if gated.outcome != "pass" else []
    row = backing_row(paired, flagged, primary) or (paired[0] if paired else None)
    if row is None:
        return ""
    return " ".join(filter(None, (row.subject, "Δ", row.delta_text, row.interval_text)))


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


# What Dagster shows for each finding: passed, and the severity when it did not.
LOOKS: dict[str, tuple[bool, AssetCheckSeverity]] = {
    "PASS": (True, AssetCheckSeverity.ERROR),  # (a pass weighs as a failure would: the
    # checks list colours a partitioned check by its latest result's severity)
    "FAIL": (False, AssetCheckSeverity.ERROR),
    "UNDECIDED": (False, AssetCheckSeverity.WARN),
    "WARN": (False, AssetCheckSeverity.WARN),
}


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
    lead: str = "",
    tail: str = "",
    tables: dict[str, str] | None = None,
) -> AssetCheckResult:
    """A check's result in its look (``LOOKS``; a check that tested nothing gets none).
    The numbers are keyed by the partition's suite (a check's plots run over all its
    partitions); ``tables`` are further Markdown tables. Its description: ``label —
    partition: lead; description`` and then the ``tail``, within DESCRIPTION_LIMIT
    (``shortened``); the whole in ``full_text`` when shortened."""
    if label not in LOOKS:
        raise ValueError(f"{name}: no Dagster result for {label!r} (a check that tested "
                         "nothing gets none: it shows as skipped)")  # fmt: skip
    passed, severity = LOOKS[label]
    body = f"{lead}; {description}" if lead and not description.startswith(lead) else description
    text = f"{label} — {partition}: {body}"
    metadata: dict[str, Any] = {"partition": str(partition), "outcome": label,
                                **plotted_per_suite(partition.suite, numbers)}  # fmt: skip
    if rows:
        metadata["details"] = MetadataValue.md(rows_markdown(rows))
    if worse:
        metadata["worse_items"] = MetadataValue.md(rows_markdown(worse))
    metadata |= {key: MetadataValue.md(table) for key, table in (tables or {}).items()}
    shown = shortened(text, DESCRIPTION_LIMIT - len(tail)) + tail
    if shown != text + tail:
        metadata["full_text"] = MetadataValue.text(text + tail)
    return AssetCheckResult(asset_key=asset, check_name=name, passed=passed, severity=severity,
                            description=shown, metadata=metadata)  # fmt: skip


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


def verdict_message(result: ResultFile, partition: CheckedPartition) -> str:
    """The run's verdict and why, with the numbers: the run's log line in the Dagster UI
    (an error for FAIL and ERROR, a warning for UNDECIDED), and the failure of a run that
    could not measure the agent (ERROR)."""
    if result.verdict is Verdict.PASS:
        return f"{partition}: PASS"
    failed = [*(["items_measured"] if result.errors else []), *result.failed]
    if result.verdict is Verdict.UNDECIDED:
        blocks = ("it blocks as a FAIL does (exit 3)" if result.exit_code
                  else "it does not block (on_undecided: warn)")  # fmt: skip
        lines = [f"{partition}: UNDECIDED — the gate could not tell; {blocks}"]
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
