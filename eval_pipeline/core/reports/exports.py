"""Files for CI: a JSON result, JUnit XML (a test case per item and per gate), a Markdown report.

Each renders the run's view model, the results file (result_file.py): it lays the
checks and rows out as they say themselves and computes no number of its own.

All text from data (ids, comments, descriptions) is escaped: XML by ElementTree, Markdown
by ``md_escape``, so a case or a model answer cannot inject markup into a CI page.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval_pipeline.core.reports.result_file import GateResult, ResultFile
from eval_pipeline.core.scoring.categories import distribution_line
from eval_pipeline.core.scoring.rows import PairedRow
from eval_pipeline.core.scoring.summary import ErrorKind, Summary, markdown_table, md_escape
from eval_pipeline.core.store.records import RunRecord, Verdict


def write_json(path: Path, result: ResultFile) -> Path:
    """The results file (core/reports/result_file.py, docs/result.schema.json)."""
    return _write(path, result.model_dump_json(indent=2) + "\n")


SHOWN_PARAMS = ("provider", "model", "base_url", "temperature", "seed", "max_tokens",
                "max_tokens_field", "tool_choice", "tool_turn_content", "timeout_s",
                "max_retries", "recording")  # fmt: skip


def model_line(run: RunRecord) -> str:
    """The effective model parameters of a run (what was sent, after the prompt's config)."""
    params = run.model_params
    shown = [f"{k}={params[k]}" for k in SHOWN_PARAMS if params.get(k) not in (None, "")]
    return ", ".join(shown) or run.model


def write_junit(path: Path, result: ResultFile) -> Path:
    run = result.run
    failing = result.item_failures()
    scores: dict[str, list[str]] = {}
    for item in result.items:
        for evaluator, value in item.scores.items():
            detail = item.score_details.get(evaluator)
            scores.setdefault(item.item_id, []).append(
                f"{evaluator} (repeat {item.repeat}): {value} — {(detail and detail.comment) or ''}"
            )
    suites = ET.Element("testsuites", name=f"eval-pipeline {run.suite}")
    items = ET.SubElement(suites, "testsuite", name=f"{run.suite}.items")
    for item_id in sorted(scores):
        case = ET.SubElement(items, "testcase", classname=f"{run.suite}.items", name=item_id)
        ET.SubElement(case, "system-out").text = "\n".join(scores[item_id])
        if item_id in failing:
            ET.SubElement(case, "failure", message=failing[item_id])
    gates = ET.SubElement(suites, "testsuite", name=f"{run.suite}.gates")
    if result.sequential:  # how far the sequential gate went, shown with the gates
        properties = ET.SubElement(gates, "properties")
        ET.SubElement(properties, "property", name="sequential", value=result.sequential)
    # items_measured, as Dagster's check: an ERROR run (scores not given, a baseline it
    # cannot be compared with) fails here, where its checks alone may all pass
    case = ET.SubElement(gates, "testcase", classname=f"{run.suite}.gates", name="items_measured")
    _gate_case(case, "FAIL" if result.errors else "PASS",
               "; ".join(result.errors) or f"all {result.summary.n_items} items measured")
    for check in result.checks:
        case = ET.SubElement(gates, "testcase", classname=f"{run.suite}.gates", name=check.name)
        _gate_case(case, check.result, check.description)
    for gate_check in result.gate.checks if result.gate else []:
        case = ET.SubElement(gates, "testcase", classname=f"{run.suite}.gates",
                             name=gate_check.name)  # fmt: skip
        label: str = "FAIL" if gate_check.blocking_failure else gate_check.result
        if label == "UNDECIDED" and result.exit_code:  # on_undecided: fail
            label = "FAIL"
        elif label not in ("PASS", "N/A", "FAIL"):
            label = "WARN"
        _gate_case(case, label, gate_check.description)
    if run.stopped:  # a budget left cases unstarted: a failure when that undecides the run
        case = ET.SubElement(gates, "testcase", classname=f"{run.suite}.gates", name="budget")
        blocking = result.verdict is Verdict.UNDECIDED and result.exit_code
        _gate_case(case, "FAIL" if blocking else "WARN", run.stopped)
    for suite in (items, gates):
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    ET.indent(suites)
    return _write(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def _gate_case(case: ET.Element, label: str, description: str) -> None:
    """A failed check is a JUnit failure; one that tested nothing is skipped."""
    if label == "FAIL":
        ET.SubElement(case, "failure", message=description[:500])
    elif label == "N/A":
        ET.SubElement(case, "skipped", message=description[:500])
    ET.SubElement(case, "system-out").text = f"{label}: {description}"


def write_markdown(
    path: Path, result: ResultFile, charts: Mapping[str, Path] | None = None
) -> Path:
    """The Markdown report, with ``charts`` (title → PNG file) linked at its end."""
    run, summary = result.run, result.summary
    lines = [
        f"# Evaluation report — {md_escape(run.suite)} ({run.tier} tier)",
        "",
        f"Run `{run.run_id}` · prompt {md_escape(run.prompt_name)} {run.prompt_version} "
        f"(`{run.prompt_hash}`) · model {md_escape(model_line(run))} · dataset "
        f"`{run.dataset_version}`"
        f" · {summary.n_cases} cases × {summary.repeats} repeat(s), "
        f"{summary.n_errors} error(s), {summary.n_paused} paused",
        "",
        f"**Verdict: {verdict_text(result)}**",
        "",
        "## Summary",
        "",
        "| metric | mean | SE | n |",
        "|---|---:|---:|---:|",
    ]
    for metric, value in summary.metrics.items():
        se = summary.metric_se.get(metric)
        lines.append(f"| {md_escape(metric)} | {_f(value)} | {_f(se)} | {summary.n_cases} |")
    if summary.categories:  # categorical metrics: each category's count
        shown = [f"- {md_escape(distribution_line(m, c))}" for m, c in summary.categories.items()]
        lines += ["", "## Categorical metrics", "", *shown]
    lines += ["", "## By category", "", markdown_table(summary.by_category, "category"), ""]
    lines += errors_section(summary)
    lines += ["## Checks", "", "| check | blocking | result | details |", "|---|---|---|---|"]
    for check in result.checks:
        lines.append(
            f"| {check.name} | {'yes' if check.blocking else 'no'} | {check.result} | "
            f"{md_escape(check.description)} |"
        )
    lines += ["", "## Regression gate", ""]
    if result.gate is None:
        lines.append(md_escape(result.gate_note or "no gate was run"))
    else:
        lines += _gate_section(result.gate)
    if flaky := summary.flaky_items:
        lines += [
            "",
            "## Flaky items (value changes across repeats)",
            "",
            "| item | metric | values | variance | pass rate |",
            "|---|---|---|---:|---:|",
        ]
        lines += [
            f"| {md_escape(f['item_id'])} | {md_escape(f['metric'])} | "
            f"{', '.join(f'{v:.2f}' for v in f['values'])} | {f['variance']:.4f} | "
            f"{f['pass_rate']:.2f} |"
            for f in flaky
        ]
    lat, tokens = summary.latency_ms, summary.tokens
    lines += [
        "",
        "## Cost and latency",
        "",
        f"Latency p50 {_f(lat.p50, 0)} ms, p95 {_f(lat.p95, 0)} ms · tokens "
        f"{tokens.input:,} in / {tokens.output:,} out · cost ${summary.cost_usd:.4f}"
        + (f" {md_escape(summary.cost_note)}" if summary.cost_note else ""),
    ]
    if summary.judge_calls:
        judged = summary.judge_tokens
        lines += [
            "",
            f"LLM judges (apart from the agent): {summary.judge_calls} call(s), tokens "
            f"{judged.input:,} in / {judged.output:,} out, cost ${summary.judge_cost_usd:.4f}",
        ]
    for title, chart in (charts or {}).items():
        relative = os.path.relpath(Path(chart).resolve(), Path(path).resolve().parent)
        lines += ["", f"![{md_escape(title)}]({Path(relative).as_posix()})"]
    return _write(path, "\n".join(lines) + "\n")


def verdict_text(result: ResultFile) -> str:
    note = f" ({result.sequential})" if result.sequential else ""
    note += f" (budget: {result.run.stopped})" if result.run.stopped else ""
    note += f" (note: {result.hint})" if result.hint else ""
    if result.errors:
        return f"ERROR — {'; '.join(result.errors)}{note}"
    if result.failed:
        return f"FAIL — {', '.join(result.failed)}{note}"
    if result.undecided:
        return f"UNDECIDED (exit {result.exit_code}) — {'; '.join(result.undecided)}{note}"
    return "PASS" + note


def errors_markdown(kinds: dict[str, ErrorKind]) -> str:
    """Errors by kind: count, the first items, whose failure, one example message."""
    lines = ["| kind | whose | items | example |", "|---|---|---|---|"]
    for kind, found in kinds.items():
        items = ", ".join(found.items) + (" …" if found.count > len(found.items) else "")
        lines.append(f"| {md_escape(kind)} | {found.fault or ''} | {found.count}: "
                     f"{md_escape(items)} | {md_escape(found.example)} |")  # fmt: skip
    return "\n".join(lines)


def errors_section(summary: Summary) -> list[str]:
    lines = []
    if summary.errors_by_kind:
        lines += [f"## Errors ({summary.n_errors} of {summary.n_items} items)", "",
                  errors_markdown(summary.errors_by_kind), ""]  # fmt: skip
    if summary.score_errors_by_kind:
        lines += [f"## Scores not given ({summary.n_score_errors})", "",
                  errors_markdown(summary.score_errors_by_kind), ""]  # fmt: skip
    return lines


def _gate_section(gate: GateResult) -> list[str]:
    lines = [f"Baseline run `{gate.baseline_run_id}` · outcome **{gate.outcome}**", ""]
    if not gate.comparable:
        return [*lines, md_escape("; ".join(gate.problems))]
    lines += [
        "| check | metric | n | Δ | 90% CI | p (Holm) | MDE | outcome |",
        "|---|---|---:|---:|---|---:|---:|---|",
    ]
    for check in gate.checks:
        if check.name != "paired_gate":
            lines.append(
                f"| {check.name} | | | | | | | {check.result}: {md_escape(check.description)} |"
            )
            continue
        for r in (r for r in check.rows if isinstance(r, PairedRow)):  # (all of its rows)
            if r.p_value is None:
                lines.append(f"| paired_gate | {md_escape(r.metric)} | {r.n} | "
                             f"{r.delta_text} | | | | {md_escape(r.note)} |")  # fmt: skip
                if r.learned:
                    lines.append(f"| | | | | | | | what it did establish: {md_escape(r.learned)} |")
                continue
            lines.append(
                f"| paired_gate | {md_escape(r.metric)} | {r.n} | {r.delta_text} | "
                f"{r.interval_text} | {r.p_holm:.3g} | {r.mde:.3f} | {r.outcome} |"
            )
    lines += ["", *(f"Note: {md_escape(n)}" for n in gate.notes)] if gate.notes else []
    worse = [w for c in gate.checks for w in c.worse_items]
    if worse:
        lines += [
            "",
            "### Worst regressions",
            "",
            "| item | baseline | candidate |",
            "|---|---:|---:|",
        ]
        lines += [
            f"| {md_escape(w.item_id)} | {w.baseline:.3f} | {w.candidate:.3f} |" for w in worse
        ]
    return lines


def _f(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{float(value):.{digits}f}"


def _write(path: Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
