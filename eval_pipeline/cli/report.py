"""The terminal report of a run (rich tables), shared by `run` and `demo`, and the
consoles every command prints to."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from eval_pipeline.core.analysis.calibration import Calibration
from eval_pipeline.core.evaluation import EvalResult, Verdict
from eval_pipeline.core.reports.exports import model_line
from eval_pipeline.core.reports.result_file import GateResult, ResultFile
from eval_pipeline.core.scoring.categories import distribution_line
from eval_pipeline.core.scoring.summary import SliceRow, Summary
from eval_pipeline.evaluators.behavioural import missing_calls
from eval_pipeline.evaluators.handoffs import handoffs_made

console = Console()
err_console = Console(stderr=True)

COLOURS = {
    "PASS": "[green]PASS",
    "WARN": "[yellow]WARN",
    "FAIL": "[red]FAIL",
    "N/A": "[dim]N/A",
    "UNDECIDED": "[magenta]UNDECIDED",
}


def print_result(console: Console, result: EvalResult, *, verbose: bool = False) -> None:
    """The whole report: header, scores, errors, checks, the gate and any warnings, laid
    out from the run's view model (the results file, as every surface); with ``verbose``,
    one block per case and repeat first."""
    if verbose:
        print_cases(console, result)
    view = ResultFile.of(result)
    print_report(console, view)
    print_gate(console, view.gate, view.gate_note)
    if view.sequential:
        console.print(f"Sequential gate: {view.sequential}")
        said = view.sequential_run
        for line in (said.paired_line, said.repeats_line) if said else ():
            if line:
                console.print(f"  {escape(line)}")
    if view.run.stopped:
        console.print(f"[yellow]Budget:[/] {escape(view.run.stopped)}")
    for warning in [*view.warnings, *view.notes]:
        console.print(f"[yellow]warning:[/] {escape(warning)}")


def verdict_line(result: EvalResult) -> str:
    """The last line of a run: PASS, FAIL with the failing checks, or ERROR with why."""
    code, verdict = result.exit_code, result.verdict
    note = "".join(f"; note: {n}" for n in (result.hint, result.run.not_baseline) if n)
    if verdict is Verdict.ERROR:
        return error_line(result.reason, code) + note
    if verdict is Verdict.UNDECIDED:
        policy = "" if code else "; on_undecided is warn"
        return f"VERDICT: UNDECIDED — {result.reason} (exit {code}{policy}){note}"
    if verdict is Verdict.FAIL:
        return f"VERDICT: FAIL — {result.reason} (exit {code}){note}"
    said = f" — {result.reason}" if result.reason else ""
    return f"VERDICT: PASS{said} (exit {code}){note}"


def error_line(why: str, code: int = 2, limit: int = 200) -> str:
    """``VERDICT: ERROR — why``: the reason's first line (with the first problem when it
    only announces a list), cut at a word, never mid-word."""
    lines = [line.strip().removeprefix("- ") for line in why.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:
        first = f"{first} {lines[1]}"
    if len(first) > limit:
        first = first[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return f"VERDICT: ERROR — {first} (exit {code})"


def print_errors(console: Console, summary: Summary) -> None:
    """Errors by kind, one paragraph each (an example message is too long for a table):
    the items', with whose failure each is, then the scores evaluators could not give."""
    for title, kinds in (
        (f"Errors by kind ({summary.n_errors} of {summary.n_items} items)",
         summary.errors_by_kind),
        (f"Scores not given ({summary.n_score_errors})", summary.score_errors_by_kind),
    ):  # fmt: skip
        if not kinds:
            continue
        console.print(f"[bold red]{escape(title)}[/]")
        for kind, found in kinds.items():
            items = ", ".join(found.items) + (" …" if found.count > len(found.items) else "")
            whose = escape(f" [{found.fault}]") if found.fault else ""
            line = f"  [red]{escape(kind)}[/]{whose} × {found.count} ({escape(items)}): "
            console.print(line + escape(found.example), highlight=False)


def print_cases(console: Console, result: EvalResult) -> None:
    """One block per case and repeat: scores (with the evaluator's comment when below
    1.0), tools called and missed, a conversation's turns, latency, tokens, the error."""
    cases = {c.id: c for c in result.cases}
    scores: dict[tuple[str, int], list] = {}
    for s in result.scores:
        scores.setdefault((s.item_id, s.repeat), []).append(s)
    for out in sorted(result.outputs, key=lambda o: (o.item_id, o.repeat)):
        case = cases.get(out.item_id)
        where = f" [{case.category}, {case.metadata.difficulty}]" if case else ""
        console.rule(f"{escape(out.item_id)}{escape(where)} · repeat {out.repeat}", align="left")
        for s in scores.get((out.item_id, out.repeat), []):
            value = "–" if s.value is None else f"{s.value:.2f}"
            note = f"  ({escape(s.comment)})" if s.comment and (s.value or 0) < 1.0 else ""
            console.print(f"  {escape(s.evaluator)}: {value}{note}", highlight=False)
        output = out.output if isinstance(out.output, dict) else None
        called = output.get("tools_called") if output is not None else None
        expected = ((case.expected_output or {}).get("expected_tools") if case else None) or []
        if called is not None or expected:
            missed = missing_calls(output, expected)
            handed = handoffs_made(output)
            line = f"  tools called: {', '.join(called or []) or 'none'}"
            line += f" · handoffs: {', '.join(handed)}" if handed else ""
            line += f" · missing: {', '.join(missed)}" if missed else ""
            console.print(escape(line), highlight=False)
        print_transcript(console, out.output)
        print_interrupts(console, out.output)
        console.print(f"  latency {out.latency_ms:,.0f} ms · tokens {out.input_tokens:,} / "
                      f"{out.output_tokens:,} · attempts {out.attempts}"
                      + (f" · reused from {out.source_run_id}" if out.source_run_id else ""),
                      highlight=False)  # fmt: skip
        if out.error:
            console.print(f"  [red]error[/] ({escape(out.error_kind or '')}): "
                          f"{escape(out.error[:500])}")  # fmt: skip


def print_transcript(console: Console, output: Any, width: int = 100) -> None:
    """A conversation's turns, one line per side, and why it stopped."""
    turns = output.get("transcript") if isinstance(output, dict) else None
    if not isinstance(turns, list):
        return
    for t in turns:
        tools = ", ".join(c.get("name", "?") for c in t.get("tool_calls") or [])
        console.print(f"  {t.get('turn')}. customer: {escape(str(t.get('customer'))[:width])}",
                      highlight=False)  # fmt: skip
        agent = str(t.get("agent") or "")[:width] + (f"  [tools: {tools}]" if tools else "")
        console.print(f"     agent: {escape(agent)}", highlight=False)
    console.print(f"  stopped: {output.get('stop_reason')} after {output.get('turns')} turn(s)",
                  highlight=False)  # fmt: skip


def print_interrupts(console: Console, output: Any, width: int = 100) -> None:
    """The interrupts the item met: what each asked, what the script answered, and
    where it paused."""
    found = output.get("interrupts") if isinstance(output, dict) else None
    for i in found if isinstance(found, list) else []:
        asked = escape(f"{i.get('name') or 'interrupt'}: {json.dumps(i.get('value'))[:width]}")
        if "answer" in i:
            answer = escape(json.dumps(i["answer"])[:width])
            console.print(f"  interrupt {asked} → answered {answer}", highlight=False)
        else:
            console.print(f"  [yellow]paused[/] at interrupt {asked} (no scripted answer)",
                          highlight=False)  # fmt: skip


def print_report(console: Console, result: ResultFile) -> None:
    run, summary = result.run, result.summary
    console.rule(f"[bold]EVALUATION REPORT — {escape(run.suite)} ({run.tier} tier)")
    prompt = f"{run.prompt_name} {run.prompt_version} ({run.prompt_hash})" if run.prompt_name \
        else "none"  # fmt: skip
    console.print(
        f"Run {run.run_id}  ·  prompt {escape(prompt)}  ·  dataset {run.dataset_version}",
        highlight=False,
    )
    console.print(f"Model: {escape(model_line(run))}", highlight=False)
    console.print(
        f"Cases: {summary.n_cases}  ·  items: {summary.n_items} ({summary.repeats} repeat(s))"
        f"  ·  errors: {summary.n_errors}  ·  paused: {summary.n_paused}"
        f"  ·  reused from memo: {summary.n_reused}"
    )
    print_errors(console, summary)
    metrics = Table(title="Mean score per evaluator (over per-case means)")
    metrics.add_column("evaluator")
    metrics.add_column("mean", justify="right")
    for name, value in summary.metrics.items():
        metrics.add_row(escape(name), _pct(value))
    for name, evaluation in summary.run_evaluations.items():
        metrics.add_row(f"{escape(name)} (run level)", _pct(evaluation.value))
    console.print(metrics)
    if passed := summary.passed:
        console.print(
            f"Passed: {passed.count}/{passed.of} ({passed.metric} >= {passed.threshold:.2f})"
        )
    if flaky := summary.flaky_items:  # cases whose outcome changed from repeat to repeat
        shown = ", ".join(
            f"{f['item_id']} ({f['metric']}: {' '.join(f'{v:.2f}' for v in f['values'])})"
            for f in flaky[:5]
        )
        more = f" and {len(flaky) - 5} more" if len(flaky) > 5 else ""
        console.print(f"[yellow]Flaky across repeats:[/] {escape(shown)}{more}")
    for metric, counts in summary.categories.items():  # categorical metrics, as counted
        console.print(f"Categories of {escape(distribution_line(metric, counts))}")
    console.print(_slice_table("category", summary.by_category))
    lat, tok = summary.latency_ms, summary.tokens
    console.print(
        f"Latency p50/p95: {lat.p50 or 0:.0f} ms / {lat.p95 or 0:.0f} ms  ·  "
        f"tokens in/out: {tok.input:,} / {tok.output:,}  ·  "
        f"estimated cost: ${summary.cost_usd:.4f} (spent by this run: "
        f"${summary.cost_usd_spent:.4f})"
    )
    if summary.cost_note:
        console.print(f"[yellow]Cost {escape(summary.cost_note)}[/]")
    if summary.judge_calls:
        judged = summary.judge_tokens
        console.print(f"LLM judges (not in the agent's cost): {summary.judge_calls} call(s) · "
                      f"tokens in/out: {judged.input:,} / {judged.output:,} · "
                      f"cost: ${summary.judge_cost_usd:.4f}")  # fmt: skip
    gates = Table(title="Checks")
    for column in ("check", "severity", "result", "details"):
        gates.add_column(column)
    for check in result.checks:
        severity = "ERROR" if check.blocking else "WARN"
        gates.add_row(check.name, severity, COLOURS[check.result],
                      escape(check.description))  # fmt: skip
    console.print(gates)


def print_gate(console: Console, gate: GateResult | None, note: str | None) -> None:
    """The regression gate: one line per check, then the items that got worse."""
    if gate is None:
        console.print(f"Regression gate: {escape(note or '')}")
        return
    table = Table(title=f"Regression gate vs baseline run {gate.baseline_run_id}")
    for column in ("check", "result", "details"):
        table.add_column(column)
    for check in gate.checks:
        table.add_row(check.name, COLOURS[check.result], escape(check.description))
    console.print(table)
    for note in gate.notes:
        console.print(f"[cyan]note:[/] {escape(note)}")
    worse = [w for c in gate.checks for w in c.worse_items]
    if worse:
        items = Table(title="Items that got worse (primary metric)")
        for column in ("item", "baseline", "candidate"):
            items.add_column(column)
        for w in worse:
            items.add_row(escape(w.item_id), f"{w.baseline:.3f}", f"{w.candidate:.3f}")
        console.print(items)


def _slice_table(title: str, rows: Mapping[str, SliceRow]) -> Table:
    columns = sorted({c for r in rows.values() for c in r.means})
    table = Table(title=f"By {title}")
    table.add_column(title)
    table.add_column("n", justify="right")
    for c in columns:
        table.add_column(c, justify="right")
    for key, row in rows.items():
        table.add_row(escape(key), str(row.n), *(_pct(row.means.get(c)) for c in columns))
    return table


def _pct(value: Any) -> str:
    return "–" if value is None else f"{float(value):.1%}"


def print_calibration(console: Console, result: Calibration) -> None:
    """Judge against people: the agreement table, the disagreements, what the judge cost."""
    a = result.agreement
    table = Table(title=f"{result.suite}: judge '{result.rubric}' against people (n={a.n})")
    table.add_column("")
    table.add_column("people: pass", justify="right")
    table.add_column("people: fail", justify="right")
    table.add_row("judge: pass", str(a.both_pass), str(a.judge_only_pass))
    table.add_row("judge: fail", str(a.human_only_pass), str(a.both_fail))
    console.print(table)
    console.print(f"{a.line()}  (a judge score ≥ {result.pass_score:g} is a pass)")
    for d in result.disagreements:
        score = "error" if d.judge_score is None else f"{d.judge_score:.2f}"
        console.print(f"  {escape(d.id)}: judge {score}, people {d.human} — "
                      f"{escape(d.reasoning)}")  # fmt: skip
    if result.judge_errors:
        console.print(f"[yellow]{result.judge_errors} judge call(s) failed: left out[/]")
    console.print(f"Judge calls: {result.judge_calls} · tokens in/out: "
                  f"{result.judge_input_tokens:,} / {result.judge_output_tokens:,} · "
                  f"cost: ${result.judge_cost_usd:.4f}")  # fmt: skip
    verdict = "BELOW FLOOR" if result.below_floor else "OK"
    console.print(f"AGREEMENT: {verdict} — kappa floor {result.min_kappa:g} "
                  f"(thresholds judges.min_kappa)")  # fmt: skip
