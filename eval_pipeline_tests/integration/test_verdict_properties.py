"""The whole verdict path on generated suites (issue 44, item 2): hypothesis draws a suite
(1–300 cases; pass/fail, partial-credit at awkward fractions, categorical and missing
scores; tied pairs, drops, rises, churn; repeats and reducers; a tier; conversations; the
thresholds with and without each check; the sequential or the fixed gate), the verdict is
reached by the functions the service calls (the thresholds, ``compare_runs``, the
sequential continuation batch by batch, ``GateReport.explained``), and every surface that
shows it is rendered: the CLI report, the results file, JUnit, Markdown, the Dagster check
results, the verdicts table and the PR comment. The properties:

- no exception;
- one verdict on every surface (the last line, the results file, Markdown, the verdicts
  table, the PR comment; JUnit fails a check exactly when the verdict blocks, Dagster
  fails one with ERROR exactly when it is FAIL or ERROR),
  and one "decided after N of M cases" line;
- per metric one outcome, one Δ and one interval, the same on every surface that shows
  them (the verdicts views: those of the metric that backs the verdict);
- rounded once: a surface shows the correctly rounded value of the exact number, and an
  undecided note's "not worse by more than x" is its own lower bound;
- each interval lies within [−1, max d] (lower) and [min d, 1] (upper), the fixed gate's
  around its Δ, and agrees with the decision: FAIL ⇒ upper < 0 and Δ ≤ −margin,
  PASS ⇒ lower ≥ −margin;
- "about N more pairs (M in all)" never beyond the suite; "decided after N of M cases"
  with N the cases run and M the suite's.

Bounded and seeded for CI (``derandomize``, the profile ``verdicts``: 80 suites and the
edge cases below, about 45 s on two cores). ``HYPOTHESIS_PROFILE=long`` (the profile
``verdicts-long``: ``HYPOTHESIS_EXAMPLES`` suites, default 2000, and 40 through the CLI)
explores afresh; benchmarks/verdict_properties.py runs the long run and counts.
A few suites also go end to end through the real CLI (``eval-pipeline run``, ``verdicts``,
``comment``) with a team agent whose scores are the generated suite's.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import random
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from statistics import median
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from eval_pipeline.cli.comment import comment_body
from eval_pipeline.cli.report import print_result, verdict_line
from eval_pipeline.core.evaluation import EvalResult, SequentialReport, goes_on
from eval_pipeline.core.evaluation.continuation import MIN_BATCH
from eval_pipeline.core.evaluation.plan import draw_order, drawn_prefix
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.reports.exports import write_junit, write_markdown
from eval_pipeline.core.reports.result_file import ResultFile
from eval_pipeline.core.reports.verdict_table import VerdictRow, verdicts_markdown
from eval_pipeline.core.running.budget import Spending
from eval_pipeline.core.scoring.categories import valued
from eval_pipeline.core.scoring.checks import run_thresholds
from eval_pipeline.core.scoring.gate import (
    NotComparable,
    Sequential,
    compare_runs,
    not_comparable_report,
)
from eval_pipeline.core.scoring.rows import PairedRow
from eval_pipeline.core.scoring.sequential import decide
from eval_pipeline.core.scoring.stats import compare_paired
from eval_pipeline.core.scoring.summary import summarize
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.records import (
    ItemOutput,
    ItemScore,
    RunRecord,
    RunStatus,
    VerdictRecord,
)
from eval_pipeline.core.suites.cases import GoldenCase, dataset_version

# --- profiles -------------------------------------------------------------------------------
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
          HealthCheck.function_scoped_fixture]  # fmt: skip
settings.register_profile("verdicts", max_examples=80, derandomize=True, deadline=None,
                          suppress_health_check=_QUIET, print_blob=True)  # fmt: skip
settings.register_profile("verdicts-long", deadline=None, suppress_health_check=_QUIET,
                          max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "2000")),
                          print_blob=True)  # fmt: skip
LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PROFILE = settings.get_profile("verdicts-long" if LONG else "verdicts")

SUITE = "props"
PRIMARY, SECOND, PASS_FAIL = "quality", "tone", "safe"
CATEGORIES = ("simple", "odd|one", "hard_*case*")

# --- the generated suite ----------------------------------------------------------------------
# Each kind of metric: its levels (worst first), how an evaluator declares it, its categories.
KINDS: dict[str, tuple[tuple[Fraction, ...], str, tuple[str, ...] | None]] = {
    "boolean": ((Fraction(0), Fraction(1)), "BOOLEAN", None),
    "halves": (tuple(Fraction(j, 2) for j in range(3)), "NUMERIC", None),
    "thirds": (tuple(Fraction(j, 3) for j in range(4)), "NUMERIC", None),
    "ninths": (tuple(Fraction(j, 9) for j in range(10)), "NUMERIC", None),
    "tone4": (tuple(Fraction(j, 3) for j in range(4)), "CATEGORICAL",
              ("rude", "curt", "neutral", "friendly")),
    "verdict3": ((Fraction(0), Fraction(1)), "CATEGORICAL", ("wrong", "partly", "correct")),
}  # fmt: skip
SCALES = {"tone4": {"order": ["rude", "curt", "neutral", "friendly"]},
          "verdict3": {"pass": ["correct"], "values": ["wrong", "partly", "correct"]}}  # fmt: skip
RATES = (Fraction(0), Fraction(1, 9), Fraction(1, 3), Fraction(1, 2), Fraction(2, 3),
         Fraction(8, 9), Fraction(1))  # fmt: skip
CHANGES = ("tied", "drop", "rise", "churn", "fresh", "swap")
MISSING = ("none", "none", "none", "error", "absent", "absent_base")


@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: str
    rate: Fraction  # the baseline's share of cases at the top level, exactly floor(rate·n)
    change: str  # how the candidate differs: tied, drop, rise, churn, fresh, swap
    share: Fraction  # of the cases that change
    missing: str = "none"

    @property
    def levels(self) -> tuple[Fraction, ...]:
        return KINDS[self.kind][0]


@dataclass(frozen=True)
class SuiteSpec:
    """A generated suite, the two runs' scores (from ``seed``) and how it is gated."""

    n: int
    seed: int
    metrics: tuple[MetricSpec, ...]
    smoke: int  # cases in the smoke tier (the first ones)
    tier: str
    gate: str
    on_undecided: str
    margin: float
    margin_option: float | None
    reducer: str
    pass_threshold: float
    base_repeats: int
    cand_repeats: int
    flaky: Fraction  # a repeat answers afresh with this probability
    min_mean: dict[str, float] | None
    floors: dict[str, dict[str, float]] | None
    binary: bool  # the pass/fail metric is in all_items_pass (and so gated by McNemar / paired)
    explicit_metrics: bool  # regression.metrics lists the gated metrics
    conversation: bool
    rerun: bool  # the candidate is the baseline's agent again (same outputs when tied)
    alpha: float = 0.05

    @property
    def primary(self) -> MetricSpec:
        return self.metrics[0]

    def thresholds(self) -> Thresholds:
        regression: dict[str, Any] = {"margin": self.margin, "reducer": self.reducer,
                                      "pass_threshold": self.pass_threshold,
                                      "alpha": self.alpha}  # fmt: skip
        gated = [m.name for m in self.metrics if m.name != PASS_FAIL]
        if self.explicit_metrics:
            regression["metrics"] = gated
        body: dict[str, Any] = {"primary_metric": PRIMARY, "regression": regression}
        if self.min_mean:
            body["min_mean"] = self.min_mean
        if self.floors:
            body["category_floors"] = self.floors
        if self.binary:
            body["all_items_pass"] = [PASS_FAIL]
        body["categories"] = {m.name: SCALES[m.kind] for m in self.metrics if m.kind in SCALES}
        return Thresholds.model_validate(body)


metric_kinds = st.sampled_from(sorted(KINDS))


@st.composite
def metric_specs(draw: st.DrawFn, name: str, kind: str | None = None) -> MetricSpec:
    return MetricSpec(
        name, kind or draw(metric_kinds), draw(st.sampled_from(RATES)),
        draw(st.sampled_from(CHANGES)), draw(st.sampled_from(RATES[:5])),
        draw(st.sampled_from(MISSING)),
    )  # fmt: skip


@st.composite
def suites(draw: st.DrawFn, most: int = 300) -> SuiteSpec:
    """A suite of 1–``most`` cases: small ones mostly (the gate is on its edges there, and
    they are cheap: what an undecided metric learned costs seconds from 150 cases on),
    one in nine from 81 up to ``most``."""
    size = draw(st.sampled_from(["small"] * 6 + ["medium"] * 2 + ["large"]))
    low, high = {"small": (1, 30), "medium": (31, 80), "large": (81, most)}[size]
    n = draw(st.integers(min(low, most), min(high, most)))
    metrics = [draw(metric_specs(PRIMARY))]
    if draw(st.booleans()):
        metrics.append(draw(metric_specs(SECOND)))
    binary = draw(st.booleans())
    if binary or draw(st.booleans()):  # scored, gated only as all_items_pass
        metrics.append(draw(metric_specs(PASS_FAIL, "boolean")))
    gate = draw(st.sampled_from(["sequential", "sequential", "fixed"]))
    tier = draw(st.sampled_from(["full", "smoke"]))
    smoke = draw(st.integers(1, max(1, min(n, 25))))
    margin = draw(st.sampled_from([0.0, 0.02, 0.05, 0.1, 0.1, 0.2, 0.333]))
    reducer = draw(st.sampled_from(["mean", "mean", "median", "max", "pass_at_k", "pass_all_k"]))
    base_repeats = draw(st.sampled_from([1, 1, 2, 3]))
    cand_repeats = draw(st.sampled_from([base_repeats, base_repeats, 1, 2]))
    min_mean = None
    if draw(st.booleans()):
        min_mean = {m.name: draw(st.sampled_from([0.0, 0.5, 0.6667, 2 / 3, 0.9]))
                    for m in metrics if m.name != PASS_FAIL and draw(st.booleans())}  # fmt: skip
        min_mean = min_mean or None
    floors = None
    if draw(st.booleans()):
        floors = {PRIMARY: {c: draw(st.sampled_from([0.0, 1 / 3, 0.5, 0.9]))
                            for c in CATEGORIES[: draw(st.integers(1, 3))]}}  # fmt: skip
    return SuiteSpec(
        n=n, seed=draw(st.integers(0, 2**32 - 1)), metrics=tuple(metrics), smoke=smoke,
        tier=tier, gate=gate, on_undecided=draw(st.sampled_from(["fail", "warn"])),
        margin=margin, margin_option=draw(st.sampled_from([None, None, None, 0.1, 0.05])),
        reducer=reducer, pass_threshold=draw(st.sampled_from([1.0, 1.0, 0.5, 0.6667])),
        base_repeats=base_repeats, cand_repeats=cand_repeats,
        flaky=draw(st.sampled_from([Fraction(0), Fraction(0), Fraction(1, 3)])),
        min_mean=min_mean, floors=floors, binary=binary,
        explicit_metrics=draw(st.booleans()), conversation=draw(st.booleans()),
        rerun=draw(st.booleans()),
    )  # fmt: skip


# --- the two runs -----------------------------------------------------------------------------
@dataclass
class Runs:
    """The suite's cases and both runs' outputs and scores (every case; the candidate's are
    handed to the gate as far as the run has gone)."""

    spec: SuiteSpec
    thresholds: Thresholds
    cases: list[GoldenCase]
    baseline: RunRecord
    candidate: RunRecord
    base_out: list[ItemOutput]
    base_scores: list[ItemScore]
    cand_out: dict[str, list[ItemOutput]]
    cand_scores: dict[str, list[ItemScore]]
    values: dict[tuple[str, str, str], list[Fraction | None]] = field(default_factory=dict)


def _levels_of(spec: MetricSpec, n: int, rng: random.Random) -> list[int]:
    """The baseline's level per case: exactly floor(rate·n) at the top, the rest below it."""
    top = len(spec.levels) - 1
    at_top = set(rng.sample(range(n), math.floor(spec.rate * n)))
    return [top if i in at_top else rng.randrange(top) for i in range(n)]


def _changed(spec: MetricSpec, base: list[int], rng: random.Random) -> list[int]:
    top, n = len(spec.levels) - 1, len(base)
    if spec.change == "tied":
        return list(base)
    if spec.change == "fresh":
        return _levels_of(spec, n, rng)
    if spec.change == "swap":  # every case below the top rises to it, ``share`` fall to 0
        at_top = [i for i in range(n) if base[i] == top]
        fall = set(rng.sample(at_top, min(len(at_top), math.floor(spec.share * n))))
        return [0 if i in fall else top for i in range(n)]
    moved = set(rng.sample(range(n), math.floor(spec.share * n)))
    out = list(base)
    for i in moved:
        if spec.change == "drop":
            out[i] = rng.randrange(base[i]) if base[i] else 0
        elif spec.change == "rise":
            out[i] = rng.randrange(base[i] + 1, top + 1) if base[i] < top else top
        else:
            out[i] = rng.randrange(top + 1)
    return out


def make_runs(spec: SuiteSpec) -> Runs:
    """Both runs of ``spec``: each case's answers (per version and repeat, what each metric
    scores: a number, a category, None for an evaluator's error, no key for no score) are
    in its input, as the CLI's team agent reads them (``write_project``)."""
    rng = random.Random(spec.seed)
    thresholds = spec.thresholds()
    ids = [f"case-{i:03d}" for i in range(spec.n)]
    categories = [CATEGORIES[rng.randrange(len(CATEGORIES))] for _ in ids]
    answers: dict[str, dict[str, list[dict[str, Any]]]] = {
        i: {"1": [{} for _ in range(spec.base_repeats)],
            "2": [{} for _ in range(spec.cand_repeats)]} for i in ids
    }  # fmt: skip
    values: dict[tuple[str, str, str], list[Fraction | None]] = {}
    for metric in spec.metrics:
        base = _levels_of(metric, spec.n, rng)
        cand = _changed(metric, base, rng)
        lost_side = {"error": "cand", "absent": "cand", "absent_base": "base"}.get(metric.missing)
        for side, version, levels in (("base", "1", base), ("cand", "2", cand)):
            lost = set(rng.sample(range(spec.n), 1 + spec.n // 20)) if lost_side == side \
                else set()  # fmt: skip
            for i, case_id in enumerate(ids):
                said: list[Fraction | None] = []
                for r, answer in enumerate(answers[case_id][version]):
                    level = levels[i]
                    if r and rng.random() < spec.flaky:
                        level = rng.randrange(len(metric.levels))
                    if i in lost and metric.missing.startswith("absent"):
                        continue  # no score at all: its evaluator gave none
                    if i in lost:
                        answer[metric.name] = None
                        said.append(None)
                        continue
                    answer[metric.name] = _given(metric, level)
                    said.append(metric.levels[level])
                values[(side, metric.name, case_id)] = said
    cases = [
        GoldenCase.model_validate({
            "id": case_id, "input": {"message": f"case {i}", "answers": answers[case_id]},
            "metadata": {"category": categories[i], "difficulty": "easy",
                         "tier": "smoke" if i < spec.smoke else "full"},
        })
        for i, case_id in enumerate(ids)
    ]  # fmt: skip
    common = {"suite": SUITE, "prompt_name": "p", "prompt_hash": "h",
              "dataset_version": dataset_version(cases), "model": "m",
              "evaluator_versions": {m.name: "1" for m in spec.metrics}}  # fmt: skip
    baseline = RunRecord(run_id="base", prompt_version="1", tier="full", agent_version="agent-1",
                         repeats=spec.base_repeats, status=RunStatus.COMPLETE,
                         **common)  # fmt: skip
    options = RunOptions(tier=spec.tier, gate=spec.gate, on_undecided=spec.on_undecided,
                         margin=spec.margin_option)  # fmt: skip
    candidate = RunRecord(run_id="cand", prompt_version="1" if spec.rerun else "2",
                          tier=spec.tier, repeats=spec.cand_repeats, options=options,
                          agent_version="agent-1" if spec.rerun else "agent-2",
                          baseline_run_id="base", **common)  # fmt: skip
    runs = Runs(spec, thresholds, cases, baseline, candidate, [], [], {}, {}, values)
    tied = all(m.change == "tied" for m in spec.metrics)
    for side, version in (("base", "1"), ("cand", "2")):
        said_as = "v1" if side == "base" or (spec.rerun and tied) else "v2"
        for case in cases:
            outputs, scores = [], []
            for r, answer in enumerate(answers[case.id][version]):
                outputs.append(
                    ItemOutput(
                        case.id,
                        r,
                        _answer(case.id, said_as, spec.conversation),
                        latency_ms=100.0,
                        input_tokens=10,
                        output_tokens=5,
                    )
                )
                scores += [_score(case.id, r, m, answer[m.name]) for m in spec.metrics
                           if m.name in answer]  # fmt: skip
            scores = valued(scores, thresholds.categories)
            if side == "base":
                runs.base_out += outputs
                runs.base_scores += scores
            else:
                runs.cand_out[case.id] = outputs
                runs.cand_scores[case.id] = scores
    return runs


def _given(metric: MetricSpec, level: int) -> float | str:
    """What the metric's evaluator answers at ``level``: a number or a category."""
    names = KINDS[metric.kind][2]
    if names is None:
        return float(metric.levels[level])
    return names[level] if metric.kind == "tone4" else ("wrong", "correct")[level]


def _answer(case_id: str, said: str, conversation: bool) -> dict[str, Any]:
    if not conversation:
        return {"response": f"{case_id}: {said}"}
    turns = [
        {"turn": 1, "customer": "hi | there", "agent": f"hello {said}", "tool_calls": []},
        {"turn": 2, "customer": "bye", "agent": "[bye]*", "tool_calls": [{"name": "x"}]},
    ]
    return {"response": f"{case_id}: {said}", "transcript": turns, "turns": 2,
            "stop_reason": "done"}  # fmt: skip


def _score(case_id: str, repeat: int, metric: MetricSpec, answer: float | str | None
           ) -> ItemScore:  # fmt: skip
    data_type = KINDS[metric.kind][1]
    if answer is None:
        return ItemScore(case_id, repeat, metric.name, None, "judge failed",
                         error_kind="judge error", data_type=data_type)  # fmt: skip
    if isinstance(answer, str):
        return ItemScore(case_id, repeat, metric.name, None, data_type="CATEGORICAL",
                         category=answer)  # fmt: skip
    return ItemScore(case_id, repeat, metric.name, answer, data_type=data_type)


# --- the verdict, as the service reaches it ---------------------------------------------------
def _judge(runs: Runs, cases: Sequence[GoldenCase], *, explain: bool) -> EvalResult:
    """core/evaluation/stages.py ``verdict`` on the cases run so far."""
    spec, thresholds = runs.spec, runs.thresholds
    outputs = [o for c in cases for o in runs.cand_out[c.id]]
    scores = [s for c in cases for s in runs.cand_scores[c.id]]
    summary = summarize(cases, outputs, scores, pass_metric=thresholds.primary_metric,
                        pass_at=thresholds.regression.pass_threshold,
                        repeats=spec.cand_repeats)  # fmt: skip
    checks = run_thresholds(summary, scores, thresholds)
    result = EvalResult(runs.candidate, summary, checks, thresholds, outputs, scores,
                        cases=list(cases))  # fmt: skip
    categories = {c.id: c.category for c in cases}
    sequential = None
    if spec.gate == "sequential":
        paired = {o.item_id for o in runs.base_out}
        sequential = Sequential(drawn_prefix(runs.candidate, runs.cases, outputs, paired),
                                suite_size=len(paired), explain=explain)  # fmt: skip
    try:
        result.gate = compare_runs(runs.baseline, runs.candidate,
                                   (runs.base_out, runs.base_scores), (outputs, scores),
                                   thresholds, categories, margin=spec.margin_option,
                                   sequential=sequential)  # fmt: skip
    except NotComparable as exc:
        result.gate = not_comparable_report(runs.candidate, runs.baseline, str(exc))
    return result


def verdict_of(runs: Runs) -> EvalResult:
    """The tier's cases, then (sequential gate) more of the suite's in batches until the
    gate can tell: core/evaluation/continuation.py ``go_on_until_decided`` without a store."""
    spec = runs.spec
    cases = [c for c in runs.cases if spec.tier == "full" or c.tier == "smoke"]
    result = _judge(runs, cases, explain=spec.gate == "fixed")
    if spec.gate != "sequential":
        return result
    done = {c.id for c in cases}
    rest = [c for c in draw_order(runs.cases, runs.candidate) if c.id not in done]
    size = max(MIN_BATCH, len(cases))
    while goes_on(result, runs.candidate.options) and rest:
        batch, rest = rest[:size], rest[size:]
        cases += batch
        result = _judge(runs, cases, explain=False)
    if result.gate is not None:
        result.gate = result.gate.explained()
    result.sequential = SequentialReport(
        cases=len(cases), suite_cases=len(runs.cases), decided=not result.undecided,
        model_calls=Spending.of_run(result.outputs, result.scores).calls,
        repeats=spec.cand_repeats, paired=len(result.gate.inputs.order)
        if result.gate is not None and result.gate.inputs is not None else None,
    )  # fmt: skip
    return result


# --- every surface ------------------------------------------------------------------------------
@dataclass
class Surfaces:
    """What each surface shows of one result: the texts people read."""

    cli: str
    last_line: str
    json: dict[str, Any]
    junit: ET.Element
    markdown: str
    dagster: list[Any]  # AssetCheckResult
    verdicts: str
    comment: str


def render(result: EvalResult, folder: Path, *, verbose: bool = False) -> Surfaces:
    from eval_pipeline.defs.evaluation.asset_checks import CheckedPartition, check_results

    console = Console(file=io.StringIO(), record=True, width=3000, color_system=None)
    print_result(console, result, verbose=verbose)
    view = ResultFile.of(result)  # the one view model every surface renders
    text = view.model_dump_json(indent=2)
    write_junit(folder / "r.xml", view)
    write_markdown(folder / "r.md", view, result.charts)
    dagster, _ = check_results(view, CheckedPartition(SUITE, "2"))
    said = result.verdict_record()
    comment = comment_body([ResultFile.model_validate_json(text)], None)
    return Surfaces(cli=console.export_text(), last_line=verdict_line(result),
                    json=json.loads(text), junit=ET.parse(folder / "r.xml").getroot(),
                    markdown=(folder / "r.md").read_text(encoding="utf-8"), dagster=dagster,
                    verdicts=verdicts_markdown([VerdictRow(result.run, said)]),
                    comment=comment)  # fmt: skip


NUM = r"[+-]?\d+\.\d{3}"
SEQUENTIAL_NOTE = re.compile(
    rf"\b(?P<metric>[a-z_]+): Δ (?P<d>{NUM}), \[(?P<lo>{NUM}), (?P<hi>{NUM})\] after "
    r"(?P<n>\d+) pairs: (?P<word>undecided|worse|not worse)"
)
FIXED_TEXT = re.compile(
    rf"\b(?P<metric>[a-z_]+): (?P<word>pass|warn|fail) \(Δ (?P<d>{NUM}), CI \[(?P<lo>{NUM}), "
    rf"(?P<hi>{NUM})\]"
)
UNTESTED_TEXT = re.compile(rf"\b(?P<metric>[a-z_]+): Δ (?P<d>{NUM}), too few items")
NOT_WORSE_BY = re.compile(
    rf"\b(?P<metric>[a-z_]+): Δ {NUM}, \[(?P<lo>{NUM}), {NUM}\] after \d+ "
    rf"pairs: undecided; not worse by more than (?P<by>\d+\.\d{{3}})"
)
MORE_PAIRS = re.compile(r"about (?P<more>\d+) more pairs \((?P<all>\d+) in all\)")
WORDS = {"undecided": "warn", "worse": "fail", "not worse": "pass"}


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def shown(value: float | None) -> str | None:
    """A number as the surfaces show it (3 decimals; −0.000 and +0.000 are one)."""
    if value is None:
        return None
    text = f"{value:+.3f}"
    return "+0.000" if text == "-0.000" else text


def as_shown(text: str) -> str:
    return shown(float(text)) or ""


@dataclass(frozen=True)
class Shown:
    """One surface's view of one metric of the paired gate."""

    surface: str
    metric: str
    outcome: str | None  # pass / warn / fail, when the surface says it
    delta: str | None
    low: str | None = None
    high: str | None = None


def from_texts(surface: str, text: str) -> list[Shown]:
    """The paired gate's per-metric numbers in a description (the sequential note or the
    fixed gate's summary)."""
    found = [Shown(surface, m["metric"], WORDS[m["word"]], as_shown(m["d"]), as_shown(m["lo"]),
                   as_shown(m["hi"])) for m in SEQUENTIAL_NOTE.finditer(text)]  # fmt: skip
    found += [Shown(surface, m["metric"], m["word"], as_shown(m["d"]), as_shown(m["lo"]),
                    as_shown(m["hi"])) for m in FIXED_TEXT.finditer(text)]  # fmt: skip
    found += [Shown(surface, m["metric"], None, as_shown(m["d"]))
              for m in UNTESTED_TEXT.finditer(text)]  # fmt: skip
    return found


def _table_cells(line: str) -> list[str]:
    """A Markdown table row's cells (escaped pipes kept inside their cell)."""
    return [unescape(c.strip()) for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def views(s: Surfaces) -> list[Shown]:
    """Every view of the paired gate's metrics on every surface."""
    out: list[Shown] = []
    paired = next(c for c in s.json["gate"]["checks"] if c["name"] == "paired_gate")
    metrics = [row["metric"] for row in paired["rows"]]
    for row in paired["rows"]:
        out.append(Shown("json rows", row["metric"], row["outcome"], shown(row["delta"]),
                         shown(row["ci_low"]), shown(row["ci_high"])))  # fmt: skip
    out += from_texts("json description", paired["description"])
    gate_lines = [line for line in s.cli.splitlines() if "paired_gate" in line]
    out += from_texts("cli", "\n".join(gate_lines))
    for case in s.junit.iter("testcase"):
        if case.get("name") == "paired_gate" and case.get("classname", "").endswith(".gates"):
            out += from_texts("junit", case.findtext("system-out") or "")
    for line in s.markdown.splitlines():
        if not line.startswith("| paired_gate |"):
            continue
        cells = _table_cells(line)
        metric, delta, interval, outcome = cells[1], cells[3], cells[4], cells[7]
        low = high = None
        if interval:
            low, high = (as_shown(v) for v in interval.strip("[]").split(", "))
        word = outcome if outcome in ("pass", "warn", "fail") else None
        out.append(Shown("markdown table", metric, word, as_shown(delta), low, high))
        if word is None:
            out += from_texts("markdown note", outcome)
    for check in s.dagster:
        if check.check_name != "paired_gate":
            continue
        meta = check.metadata
        out += from_texts("dagster description", check.description)
        for metric in metrics:
            key = f"{SUITE}.{metric} Δ"
            if key in meta:
                interval = meta.get(f"{metric} CI")
                text = getattr(interval, "value", interval)
                low = high = None
                if text:
                    low, high = (as_shown(v) for v in str(text).strip("[]").split(", "))
                value = getattr(meta[key], "value", meta[key])
                out.append(Shown("dagster numbers", metric, None, shown(value), low, high))
        details = meta.get("details")
        if details is not None:
            lines = details.value.splitlines()
            head = _table_cells(lines[0])
            for line in lines[2:]:
                if not line.startswith("|"):
                    continue
                cell = dict(zip(head, _table_cells(line), strict=True))
                out.append(
                    Shown(
                        "dagster details",
                        cell["metric"],
                        cell["outcome"] or None,
                        as_shown(cell["delta"]),
                        as_shown(cell["ci_low"]) if cell["ci_low"] else None,
                        as_shown(cell["ci_high"]) if cell["ci_high"] else None,
                    )
                )
    return out


def result_rows(result: EvalResult) -> list[PairedRow]:
    check = result.gate.check("paired_gate") if result.gate else None
    return [r for r in check.rows if isinstance(r, PairedRow)] if check else []


def verdict_views(s: Surfaces) -> dict[str, tuple[str, str, str, str, str]]:
    """(verdict, metric, Δ, interval, decided) as the verdicts table and the PR comment
    show them."""
    out = {}
    for name, text, at in (("verdicts table", s.verdicts, (3, 4, 5, 6, 7)),
                           ("pr comment", s.comment, (1, 2, 3, 4, 5))):  # fmt: skip
        rows = [line for line in text.splitlines() if line.startswith(f"| {SUITE}")]
        assert len(rows) == 1, (name, text)
        cells = _table_cells(rows[0])
        verdict = cells[at[0]].strip("*").split(":")[0].split("*")[0].strip()
        out[name] = (verdict, *(cells[i] for i in at[1:]))
    return out


# --- the exact numbers ----------------------------------------------------------------------------
def _reduce(values: list[Fraction | None], reducer: str, at: float) -> Fraction | None:
    """core/scoring/reducers.py on exact values (an evaluator's error counts as 0 there)."""
    if not values:
        return None
    vals = [Fraction(0) if v is None else v for v in values]
    if reducer == "mean":
        return sum(vals, Fraction(0)) / len(vals)
    if reducer == "median":
        return Fraction(median(vals))
    if reducer == "max":
        return max(vals)
    if reducer == "pass_at_k":
        return Fraction(int(any(v >= at for v in vals)))
    return Fraction(int(all(v >= at for v in vals)))


def exact_differences(runs: Runs, result: EvalResult, metric: str) -> list[Fraction]:
    """The paired differences the gate decides ``metric`` on, exactly, in its order."""
    inputs = result.gate.inputs
    thresholds, reg = runs.thresholds, runs.thresholds.regression
    items = set(inputs.items)
    order = [i for i in inputs.order if i in items] if inputs.order is not None else inputs.items
    out = []
    for item in order:
        x = _reduce(runs.values.get(("base", metric, item), []), reg.reducer, reg.pass_threshold)
        y = _reduce(runs.values.get(("cand", metric, item), []), reg.reducer, reg.pass_threshold)
        if x is None or y is None:
            continue
        if metric in thresholds.binary_metrics and metric not in thresholds.gated_metrics:
            x, y = Fraction(int(x >= reg.pass_threshold)), Fraction(int(y >= reg.pass_threshold))
        out.append(y - x)
    if inputs.order is not None and out:  # the sequential gate's evidence ends at its decision
        at = decide({metric: [float(v) for v in out]}, margin=inputs.margin,
                    alpha_not_worse=inputs.alpha, alpha_worse=inputs.alpha,
                    family=len(inputs.sequential_metrics), look_ahead=False)[metric].decided_at
        out = out[:at] if at else out
    return out


def exact_bounds(runs: Runs, result: EvalResult) -> dict[str, tuple[float, float]]:
    """Each metric's interval before any rounding (the gate's own computation on the exact
    differences: the sequential bounds, or the fixed gate's t interval within [−1, 1])."""
    inputs = result.gate.inputs
    diffs = {r.metric: [float(d) for d in exact_differences(runs, result, r.metric)]
             for r in result_rows(result)}  # fmt: skip
    if inputs.order is None:
        out = {}
        for metric in diffs:
            if len(diffs[metric]) and (b := inputs.paired(metric))[0]:
                c = compare_paired(*b, margin=inputs.margin, alpha=inputs.alpha)
                out[metric] = (min(1.0, max(-1.0, c.ci_low)), min(1.0, max(-1.0, c.ci_high)))
        return out
    decided = decide(diffs, margin=inputs.margin, alpha_not_worse=inputs.alpha,
                     alpha_worse=inputs.alpha, family=len(inputs.sequential_metrics),
                     look_ahead=False)  # fmt: skip
    return {m: (d.lower, d.upper) for m, d in decided.items()}


def rounded(exact: Fraction | float) -> set[str]:
    """The correctly rounded 3-decimal texts of ``exact`` (both, at a tie)."""
    scaled = Fraction(exact) * 1000
    low = math.floor(scaled)
    rest = scaled - low
    picks = (
        [low] if rest < Fraction(1, 2) else [low + 1] if rest > Fraction(1, 2) else [low, low + 1]
    )
    return {shown(k / 1000) or "" for k in picks}


# --- the properties -------------------------------------------------------------------------------
Violations = list[tuple[str, str]]


def check(runs: Runs, result: EvalResult, s: Surfaces) -> Violations:
    """Every property of one verdict and its surfaces: (property, what broke) for each
    violation."""
    found = check_surfaces(s, blocks=_blocks(result.verdict.value, result.exit_code))
    expect = _expecting(found)
    expect("one verdict", s.json["verdict"] == result.verdict.value
           and s.json["exit_code"] == result.exit_code,
           f"results file {s.json['verdict']} {s.json['exit_code']}, result "
           f"{result.verdict.value} {result.exit_code}")  # fmt: skip
    said = json.loads(json.dumps(dataclasses.asdict(result.verdict_record())))
    expect(
        "the same on every surface",
        s.json["conclusion"] == said,
        f"results file conclusion {s.json['conclusion']}, verdict record {said}",
    )
    rows = result_rows(result)
    if result.gate is None or not result.gate.comparable:
        return found
    _rounded_once(runs, result, rows, expect)
    _intervals(runs, result, rows, expect)
    _within_the_suite(result, rows, expect)
    return found


def check_surfaces(s: Surfaces, *, blocks: bool) -> Violations:
    """The properties every surface's text must hold, read from the surfaces alone (the
    results file's rows are the gate's): one verdict, and per metric one outcome, one Δ,
    one interval."""
    found: Violations = []
    expect = _expecting(found)
    _one_verdict(s, blocks, expect)
    gate = s.json["gate"]
    if gate is not None and gate["comparable"]:
        _same_everywhere(s, expect)
    return found


def _blocks(verdict: str, exit_code: int) -> bool:
    return verdict in ("FAIL", "ERROR") or (verdict == "UNDECIDED" and exit_code != 0)


def _expecting(found: Violations) -> Expect:
    def expect(prop: str, ok: bool, why: str | Callable[[], str]) -> None:
        if not ok:
            found.append((prop, why if isinstance(why, str) else why()))

    return expect


Expect = Callable[[str, bool, str | Callable[[], str]], None]


def _one_verdict(s: Surfaces, blocks: bool, expect: Expect) -> None:
    verdict = s.json["verdict"]
    prop = "one verdict"
    expect(prop, s.json["conclusion"]["verdict"] == verdict, "the results file's conclusion")
    expect(prop, s.last_line.startswith(f"VERDICT: {verdict}"), s.last_line)
    expect(prop, f"**Verdict: {verdict}" in s.markdown, "the Markdown report's verdict")
    for name, (said_verdict, *_) in verdict_views(s).items():
        expect(prop, said_verdict == verdict, f"{name}: {said_verdict}, not {verdict}")
    # JUnit: a gate's test case fails exactly when the verdict blocks (an item that got
    # worse fails its own test case in the items suite, whatever the verdict)
    gates = next(t for t in s.junit.iter("testsuite") if t.get("name", "").endswith(".gates"))
    failed = [c.get("name") for c in gates.iter("testcase") if c.find("failure") is not None]
    expect(prop, bool(failed) == blocks, f"JUnit: gates {failed} failed, verdict {verdict} "
           f"exit {s.json['exit_code']}")  # fmt: skip
    # how far a sequential gate went: one line, wherever it is said
    line = s.json["sequential"]
    expect(prop, s.json["conclusion"]["decided_after"] == line, "the conclusion's decided_after")
    for name, (*_, decided) in verdict_views(s).items():
        expect(prop, decided == (line or "–"), f"{name}: decided {decided!r}, not {line!r}")
    if line is not None:
        told = {
            "cli": f"Sequential gate: {line}" in s.cli,
            "markdown": f"({line})" in s.markdown,
            "junit": any(p.get("value") == line for p in s.junit.iter("property")),
        }
        if s.dagster:
            told["dagster"] = any(f"({line})" in c.description for c in s.dagster
                                  if c.check_name == "paired_gate")  # fmt: skip
        expect(prop, all(told.values()), f"'{line}' not said by {told}")
    if s.dagster:
        errors = [c.check_name for c in s.dagster if not c.passed
                  and c.severity.value == "ERROR"]  # fmt: skip
        red = verdict in ("FAIL", "ERROR")  # (UNDECIDED blocks too, in yellow: a warning)
        expect(prop, bool(errors) == red, f"Dagster: {errors} failed with ERROR, verdict "
               f"{verdict} exit {s.json['exit_code']}")  # fmt: skip
        if verdict == "UNDECIDED":
            expect(prop, any(c.description.startswith("UNDECIDED") for c in s.dagster),
                   "Dagster: no check says UNDECIDED")  # fmt: skip


def _same_everywhere(s: Surfaces, expect: Expect) -> None:
    """Per metric one outcome, one Δ, one interval on every surface that shows it: the
    gate's row (the results file's) as the surfaces round it."""
    prop = "the same on every surface"
    paired = next(c for c in s.json["gate"]["checks"] if c["name"] == "paired_gate")
    rows = [PairedRow.model_validate(r) for r in paired["rows"]]
    by_metric = {r.metric: r for r in rows}
    seen = views(s)
    for view in seen:
        row = by_metric.get(view.metric)
        if row is None:
            expect(prop, False, f"{view.surface} shows {view.metric}, not a gate row")
            continue
        want = (row.outcome, shown(row.delta), shown(row.ci_low), shown(row.ci_high))
        got = (view.outcome or row.outcome, view.delta, view.low or want[2],
               view.high or want[3])  # fmt: skip
        expect(prop, got == want, f"{view.surface}: {view} ≠ row {want}")
    for row in rows:  # every row, on the surfaces that list them all
        for surface in ("json rows", "markdown table"):
            expect(prop, any(v.metric == row.metric and v.surface == surface for v in seen),
                   f"{surface} lacks {row.metric}")  # fmt: skip
    said = VerdictRecord(**s.json["conclusion"])
    if said.metric is not None:
        backing = by_metric.get(said.metric)
        expect(prop, backing is not None and (said.delta, said.ci_low, said.ci_high)
               == (backing.delta, backing.ci_low, backing.ci_high),
               f"the verdict's {said} is not its metric's row {backing}")  # fmt: skip
    interval = "–" if said.ci_low is None or said.ci_high is None else \
        f"[{_signed(said.ci_low)}, {_signed(said.ci_high)}]"  # fmt: skip
    want = (said.metric or "–", "–" if said.delta is None else _signed(said.delta), interval)
    for name, (_, *got) in verdict_views(s).items():
        expect(prop, tuple(got[:3]) == want, f"{name}: {got} ≠ {want}")


def _signed(value: float) -> str:
    """3 decimals with a sign, as the verdicts views show a number (−0.000 as it comes)."""
    return f"{value:+.3f}"


def _rounded_once(runs: Runs, result: EvalResult, rows: list[PairedRow],
                  expect: Expect) -> None:  # fmt: skip
    """The 3 decimals every surface shows are the exact number's, correctly rounded (not the
    4-decimal row's rounded again); and the bound an undecided note says in words is the
    one it shows."""
    bounds = exact_bounds(runs, result)
    for row in rows:
        d = exact_differences(runs, result, row.metric)
        if d:
            exact = sum(d, Fraction(0)) / len(d)
            expect("rounded once", shown(row.delta) in rounded(exact),
                   lambda r=row, e=exact: f"{r.metric}: Δ {e} = {float(e)!r} shown "
                   f"{shown(r.delta)}, not one of {rounded(e)}")  # fmt: skip
        if row.ci_low is not None and row.metric in bounds:
            low, high = bounds[row.metric]
            for name, value, exact_bound in (("lower", row.ci_low, low),
                                             ("upper", row.ci_high, high)):  # fmt: skip
                expect("rounded once", shown(value) in rounded(exact_bound),
                       lambda r=row, n=name, v=value, e=exact_bound: f"{r.metric}: {n} bound "
                       f"{e!r} shown {shown(v)}, not one of {rounded(e)}")  # fmt: skip
    description = result.gate.check("paired_gate").description
    for m in NOT_WORSE_BY.finditer(description):
        low = float(m["lo"])
        expect("one bound per note", f"{max(0.0, -low):.3f}" == m["by"],
               lambda mm=m: f"{mm['metric']}: [{mm['lo']}, …] but 'not worse by more than "
               f"{mm['by']}'")  # fmt: skip


def _intervals(runs: Runs, result: EvalResult, rows: list[PairedRow], expect: Expect) -> None:
    """Within the range of what the pairs can show, and agreeing with the decision."""
    prop = "intervals"
    inputs = result.gate.inputs
    margin, sequential = inputs.margin, inputs.order is not None
    tol = 5e-5  # (the rows hold 4 decimals)
    for row in rows:
        d = exact_differences(runs, result, row.metric)
        expect(prop, row.n == len(d), f"{row.metric}: n {row.n}, {len(d)} pairs")
        if not d:
            continue
        lo_d, hi_d = float(min(d)), float(max(d))
        expect(
            prop,
            lo_d - tol <= row.delta <= hi_d + tol,
            f"{row.metric}: Δ {row.delta} outside [{lo_d}, {hi_d}]",
        )
        if row.ci_low is None or row.ci_high is None:
            # (UNCHANGED: a pass that needs no statistics)
            ok = row.outcome != "pass" or inputs.unchanged
            expect(prop, ok, f"{row.metric}: PASS untested")
            continue
        low, high = row.ci_low, row.ci_high
        expect(prop, -1.0 <= low <= high <= 1.0, lambda r=row: f"{r.metric}: [{r.ci_low}, "
               f"{r.ci_high}] not within [−1, 1]")  # fmt: skip
        if sequential:  # a bet cannot rule out a mean beyond every pair it saw
            expect(
                prop,
                low <= hi_d + tol and high >= lo_d - tol,
                f"{row.metric}: [{low}, {high}] beyond the pairs' [{lo_d}, {hi_d}]",
            )
        else:
            expect(
                prop,
                low - tol <= row.delta <= high + tol,
                lambda r=row: f"{r.metric}: Δ {r.delta} outside [{r.ci_low}, {r.ci_high}]",
            )
        if inputs.unchanged:  # UNCHANGED: a pass that needs no statistics
            continue
        if row.outcome == "fail":
            expect(prop, high < 0 and row.delta <= -margin + 1e-12,
                   lambda r=row: f"{r.metric}: FAIL with Δ {r.delta}, upper {r.ci_high}, "
                   f"margin {margin}")  # fmt: skip
        if row.outcome == "pass":
            expect(prop, low >= -margin - 1e-12, lambda r=row: f"{r.metric}: PASS with lower "
                   f"{r.ci_low} below −{margin}")  # fmt: skip


def _within_the_suite(result: EvalResult, rows: list[PairedRow], expect: Expect) -> None:
    """ "about N more pairs" and "decided after N" never beyond the cases the suite has."""
    inputs = result.gate.inputs
    suite = inputs.suite_size
    if suite is None:  # the fixed gate: no look-ahead, no continuation
        return
    texts = [result.gate.check("paired_gate").description, *(r.note for r in rows),
             *(r.learned or "" for r in rows), *result.undecided]  # fmt: skip
    for text in texts:
        for m in MORE_PAIRS.finditer(text):
            expect("about N more pairs", int(m["all"]) <= suite,
                   lambda mm=m: f"'{mm[0]}' with {suite} cases in the suite")  # fmt: skip
    for row in rows:
        expect(
            "about N more pairs",
            row.cases_needed is None or row.cases_needed <= suite,
            lambda r=row: f"{r.metric}: cases_needed {r.cases_needed} of {suite}",
        )
    said = result.sequential
    if said is not None:
        expect("decided after N", said.cases <= said.suite_cases and
               said.cases == len({o.item_id for o in result.outputs}),
               lambda: f"{said.line()}: {len(result.outputs)} outputs")  # fmt: skip
        expect("decided after N", all(r.n <= said.cases for r in rows), lambda: "n > cases")


# --- the tests ----------------------------------------------------------------------------------
def run_properties(spec: SuiteSpec) -> tuple[EvalResult, Violations]:
    """``spec``'s verdict through every surface, and the properties it breaks."""
    runs = make_runs(spec)
    result = verdict_of(runs)
    with tempfile.TemporaryDirectory() as folder:
        surfaces = render(result, Path(folder), verbose=spec.conversation and spec.n <= 20)
    return result, check(runs, result, surfaces)


def spec_of(**given: Any) -> SuiteSpec:
    """A suite with plain defaults (one pass/fail metric, 30 cases, the sequential gate)."""
    metric = MetricSpec(PRIMARY, "boolean", Fraction(2, 3), "tied", Fraction(0))
    defaults: dict[str, Any] = {
        "n": 30, "seed": 0, "metrics": (metric,), "smoke": 5, "tier": "full",
        "gate": "sequential", "on_undecided": "fail", "margin": 0.1, "margin_option": None,
        "reducer": "mean", "pass_threshold": 1.0, "base_repeats": 1, "cand_repeats": 1,
        "flaky": Fraction(0), "min_mean": None, "floors": None, "binary": False,
        "explicit_metrics": False, "conversation": False, "rerun": False,
    }  # fmt: skip
    return SuiteSpec(**(defaults | given))


# A pass/fail metric passed by exactly 2/3 of the baseline's cases, a third of the pairs
# better and a third worse: undecided, and ``learned`` crashed with "ValueError:
# base_rate=0.67, flip=0.33" (round(1/3, 2) > 1 − 0.67).
TWO_THIRDS = spec_of(n=30, metrics=(MetricSpec(PRIMARY, "boolean", Fraction(2, 3), "swap",
                                               Fraction(1, 3)),))  # fmt: skip
EDGES = [
    TWO_THIRDS,
    spec_of(n=1, rerun=True),  # one case, the same agent: UNCHANGED
    spec_of(n=1, gate="fixed"),  # one pair: Δ only, never a pass
    # 300 cases, ninths, a small drop, no margin
    spec_of(
        n=300,
        metrics=(MetricSpec(PRIMARY, "ninths", Fraction(1, 9), "drop", Fraction(1, 9)),),
        margin=0.0,
    ),
    spec_of(
        n=27,
        tier="smoke",
        smoke=3,
        on_undecided="warn",
        margin=0.02,
        metrics=(
            MetricSpec(PRIMARY, "thirds", Fraction(1, 3), "tied", Fraction(0)),
            MetricSpec(SECOND, "tone4", Fraction(2, 3), "churn", Fraction(1, 9)),
            MetricSpec(PASS_FAIL, "boolean", Fraction(8, 9), "drop", Fraction(1, 9)),
        ),
        binary=True,
        explicit_metrics=True,
    ),  # all tied on the primary, two others
]


@PROFILE
@given(spec=suites())
def test_every_verdict_path_holds_its_properties(spec: SuiteSpec) -> None:
    """No exception; one verdict and per metric one outcome, Δ and interval on every
    surface, rounded once; intervals within the pairs' range and agreeing with the
    decisions; "about N more pairs" and "decided after N" within the suite."""
    _, found = run_properties(spec)
    assert not found, "\n".join(f"{prop}: {why}" for prop, why in found)


for _edge in EDGES:
    test_every_verdict_path_holds_its_properties = example(spec=_edge)(
        test_every_verdict_path_holds_its_properties
    )


# --- what the properties found in the gate, each fixed, its smallest reproduction kept -------
def _holds(spec: SuiteSpec) -> None:
    _, found = run_properties(spec)
    assert not found, "\n".join(f"{prop}: {why}" for prop, why in found)


def test_a_category_with_no_pair_is_a_verdict() -> None:
    """One case, its primary score missing in the baseline (its evaluator gave none): the
    sequential gate has no pair to decide on, and the case's category none either.
    Expected: a verdict (ERROR or UNDECIDED), the same on every surface."""
    _holds(spec_of(n=1, metrics=(MetricSpec(PRIMARY, "boolean", Fraction(1), "tied",
                                            Fraction(0), "absent_base"),)))  # fmt: skip


def test_a_fixed_gate_without_a_pair_is_a_verdict() -> None:
    """The same suite under the fixed gate."""
    _holds(spec_of(n=1, gate="fixed", metrics=(MetricSpec(PRIMARY, "boolean", Fraction(1),
                                                          "tied", Fraction(0),
                                                          "absent_base"),)))  # fmt: skip


def test_an_unchanged_fixed_gate_says_pass_for_each_metric() -> None:
    """Five cases, the baseline's agent again with the same outputs and scores, the fixed
    gate: PASS (UNCHANGED), and every surface says quality: pass."""
    _holds(spec_of(n=5, gate="fixed", rerun=True))


# --- end to end: the real CLI on a few generated suites -------------------------------------------
AGENT = '''
from eval_pipeline.core.running.agent import current_item


def answer(input, ctx):
    """What the generated suite says each metric scores, for this prompt version and
    repeat (the evaluators read them back)."""
    version = "2" if "second" in ctx.system_prompt() else "1"
    scope = current_item.get()
    return {"response": "ok", "answers": input["answers"][version][scope.repeat if scope else 0]}
'''
EVALUATOR = """

@evaluator(name="{name}", data_type="{data_type}")
def {name}(*, output, **_):
    value = output["answers"][{name!r}]
    if value is None:
        raise ScoreError("judge error", "the judge failed")
    if isinstance(value, str):
        return Evaluation(name={name!r}, value=value, data_type="CATEGORICAL")
    return value
"""


def write_project(root: Path, spec: SuiteSpec, runs: Runs, package: str) -> Path:
    """A team's project for ``spec``: the suite ``props`` on its cases, an agent that answers
    with each case's generated scores and an evaluator per metric that reads them back."""
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text("")
    (root / package / "agent.py").write_text(AGENT)
    evaluators = "from langfuse import Evaluation\n\n"
    evaluators += "from eval_pipeline.evaluators.declare import ScoreError, evaluator\n"
    for m in spec.metrics:
        evaluators += EVALUATOR.format(name=m.name, data_type=KINDS[m.kind][1])
    (root / f"{package}_scores.py").write_text(evaluators)
    data = root / "evals" / SUITE
    data.mkdir(parents=True)
    cases = [c.model_dump(mode="json", exclude_none=True) for c in runs.cases]
    (data / "cases.yaml").write_text(yaml.safe_dump(cases, sort_keys=False))
    thresholds = runs.thresholds.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    (data / "thresholds.yaml").write_text(yaml.safe_dump(thresholds))
    suite = {"agent": f"{package}.agent:answer", "dataset": f"evals/{SUITE}",
             "prompt": f"{SUITE}/assistant", "repeats": spec.base_repeats,
             "evaluators": [f"{package}_scores:{m.name}" for m in spec.metrics],
             "thresholds": f"evals/{SUITE}/thresholds.yaml"}  # fmt: skip
    project = root / "eval-pipeline.yaml"
    project.write_text(yaml.safe_dump({"prompts": "prompts", "suites": {SUITE: suite}}))
    prompts = root / "prompts" / SUITE / "assistant"
    prompts.mkdir(parents=True)
    for version, text in ((1, "Answer."), (2, "Answer, second version.")):
        body = {"type": "text", "config": {"temperature": 0.0}, "prompt": text}
        (prompts / f"v{version}.yaml").write_text(yaml.safe_dump(body))
    (root / "prompts" / "labels.yaml").write_text(f"{SUITE}/assistant:\n  production: 1\n")
    return project


def for_the_cli(spec: SuiteSpec) -> SuiteSpec:
    """What a team's project can say: no score missing without an error (an evaluator that
    gives no score answers None, a 0), another agent than the baseline's, the baseline's
    repeats (no flaky case repeated more), up to 40 cases (each run takes seconds)."""
    metrics = tuple(dataclasses.replace(m, missing="none" if m.missing.startswith("absent")
                                        else m.missing) for m in spec.metrics)  # fmt: skip
    return dataclasses.replace(spec, n=min(spec.n, 40), smoke=min(spec.smoke, 40),
                               metrics=metrics, rerun=False, cand_repeats=spec.base_repeats,
                               conversation=False)  # fmt: skip


def cli(*args: str) -> Any:
    from click.testing import CliRunner

    from eval_pipeline.cli import main

    return CliRunner().invoke(main, list(args), terminal_width=3000)


CLI_EXAMPLES = int(os.environ.get("HYPOTHESIS_CLI_EXAMPLES", "40" if LONG else "1"))
CLI_EDGES = [
    # the fixed gate on partial credit in thirds, two gated metrics, a third of the cases worse
    spec_of(n=30, gate="fixed", min_mean={PRIMARY: 0.5, SECOND: 2 / 3},
            floors={PRIMARY: {"simple": 1 / 3}},
            metrics=(MetricSpec(PRIMARY, "thirds", Fraction(2, 3), "drop", Fraction(1, 3)),
                     MetricSpec(SECOND, "ninths", Fraction(1, 9), "churn", Fraction(1, 9)))),
    # the smoke tier first, then more cases; categorical and pass/fail metrics, 2 repeats
    spec_of(n=40, tier="smoke", smoke=5, base_repeats=2, cand_repeats=2, flaky=Fraction(1, 3),
            on_undecided="warn",
            metrics=(MetricSpec(PRIMARY, "tone4", Fraction(1, 3), "rise", Fraction(1, 9)),
                     MetricSpec(PASS_FAIL, "boolean", Fraction(8, 9), "drop", Fraction(1, 9)))),
    TWO_THIRDS,  # undecided on a pass rate of exactly 2/3: what it learned
]  # fmt: skip


@settings(PROFILE, max_examples=CLI_EXAMPLES)
@given(spec=suites(most=40).map(for_the_cli))
def test_the_cli_shows_one_verdict_everywhere(spec: SuiteSpec, tmp_path_factory: Any,
                                              monkeypatch: Any) -> None:  # fmt: skip
    """A generated suite through `eval-pipeline run` (its baseline, then the candidate with
    --json, --junit and --report), `eval-pipeline verdicts` and `eval-pipeline comment`: one
    verdict and per metric one Δ and interval on every surface, the exit code the results
    file's; the fixed gate's verdict and rows those of the in-process path above."""
    from eval_pipeline import settings as app_settings
    from eval_pipeline.core.reports.verdict_table import latest_verdicts
    from eval_pipeline.core.store.results_store import ResultsStore
    from eval_pipeline_tests.helpers import clean_cli_env

    runs = make_runs(spec)
    tmp = tmp_path_factory.mktemp("cli")
    package = f"team_{tmp.name.replace('-', '_')}"
    project = write_project(tmp / "team", spec, runs, package)
    with monkeypatch.context() as env:
        clean_cli_env(env, tmp / "home", project)
        env.setenv("COLUMNS", "3000")
        env.chdir(tmp / "team")
        try:
            base = cli("run", "--suite", SUITE, "--prompt-version", "1")
            assert base.exit_code in (0, 1, 3), base.output  # (its thresholds may fail)
            out = tmp / "out"
            flags = ["--tier", spec.tier, "--gate", spec.gate, "--on-undecided",
                     spec.on_undecided, "--json", str(out / f"{SUITE}.json"), "--junit",
                     str(out / "r.xml"), "--report", str(out / "r.md")]  # fmt: skip
            if spec.margin_option is not None:
                flags += ["--margin", str(spec.margin_option)]
            done = cli("run", "--suite", SUITE, "--prompt-version", "2", "--baseline",
                       "production", *flags)  # fmt: skip
            body = json.loads((out / f"{SUITE}.json").read_text())
            assert done.exit_code == body["exit_code"], done.output
            table = cli("verdicts", "--suite", SUITE)
            comment = cli("comment", str(out), "--dry-run")
            store = ResultsStore(app_settings.results_url())
            rows = latest_verdicts(store, SUITE)
        finally:
            for name in [m for m in sys.modules if m.startswith(package)]:
                del sys.modules[name]
    said = body["conclusion"]
    surfaces = Surfaces(
        cli=done.output, last_line=done.output.strip().splitlines()[-1], json=body,
        junit=ET.parse(out / "r.xml").getroot(), markdown=(out / "r.md").read_text(),
        dagster=[], verdicts=verdicts_markdown([r for r in rows if r.run.run_id == said["run_id"]]),
        comment=comment.output,
    )  # fmt: skip
    found = check_surfaces(surfaces, blocks=_blocks(body["verdict"], body["exit_code"]))
    line = next(x for x in table.output.splitlines() if said["run_id"] in x)
    if line.lstrip().startswith("run "):  # narrower than the table: a block per version
        line = next(b for b in re.split(r"\n\s*\n", table.output) if said["run_id"] in b)
    record = VerdictRecord(**said)
    for text in (body["verdict"], record.delta_text, record.interval_text):
        if text not in line:
            found.append(("the same on every surface", f"`verdicts`: {text} not in {line}"))
    if spec.gate == "fixed":  # (the sequential gate's draw is seeded by the agent's code)
        result = verdict_of(runs)
        expected = [(r.metric, r.outcome, shown(r.delta), r.n) for r in result_rows(result)]
        paired = next(c for c in body["gate"]["checks"] if c["name"] == "paired_gate")
        got = [(r["metric"], r["outcome"], shown(r["delta"]), r["n"]) for r in paired["rows"]]
        if (body["verdict"], got) != (result.verdict.value, expected):
            found.append(("in process = the CLI", f"{body['verdict']} {got} in the CLI, "
                          f"{result.verdict.value} {expected} in process"))  # fmt: skip
    assert not found, "\n".join(f"{prop}: {why}" for prop, why in found)


for _edge in CLI_EDGES:
    test_the_cli_shows_one_verdict_everywhere = example(spec=_edge)(
        test_the_cli_shows_one_verdict_everywhere
    )


@settings(PROFILE, max_examples=10)
@example(drops=6, ties=100)
@given(drops=st.integers(1, 30), ties=st.integers(0, 270))
def test_a_fail_shows_a_drop_of_the_margin(drops: int, ties: int) -> None:
    """``drops`` cases first in the draw that the candidate fails (the baseline passed
    them), then ``ties`` tied ones, all run at once (--tier full): a FAIL shows an upper
    bound below 0 and Δ ≤ −margin. It showed the Δ of all the pairs (−0.057 at a margin of
    0.1) beside a WORSE reached on the first few; the evidence is now the pairs up to the
    decision, which stands (sequential.py ``_decide_one``)."""
    from eval_pipeline_tests.unit.test_gate import record

    items = [f"c{i:03d}" for i in range(drops + ties)]
    outputs = [ItemOutput(i, 0, {}) for i in items]
    base = [ItemScore(i, 0, PRIMARY, 1.0) for i in items]
    cand = [ItemScore(i, 0, PRIMARY, 0.0 if n < drops else 1.0) for n, i in enumerate(items)]
    thresholds = Thresholds.model_validate({"primary_metric": PRIMARY,
                                            "regression": {"margin": 0.1}})  # fmt: skip
    versions = {"evaluator_versions": {PRIMARY: "1"}}
    report = compare_runs(record("b", **versions), record("c", "v2", **versions),
                          (outputs, base), (outputs, cand), thresholds, {},
                          sequential=Sequential(items, len(items)))  # fmt: skip
    row = next(r for r in report.check("paired_gate").rows if r.metric == PRIMARY)
    if row.outcome == "fail":
        assert row.ci_high < 0 and row.delta <= -0.1, row
