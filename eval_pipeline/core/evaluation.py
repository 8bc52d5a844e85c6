"""One evaluation, in five stages shared by the CLI, the Dagster assets, the demo and
``eval_pipeline.evaluate()``:

plan (what runs, against which baseline; writes nothing) → produce (agent calls, memo) →
score (evaluators) → summarise (aggregates; the run is complete) → verdict (thresholds
and the regression gate).

Each stage reads its inputs from and writes its results to the results store in one
transaction, so a crash between stages leaves a 'running' run and no half summary. The
CLI runs the stages in one process (``evaluate``); Dagster runs produce, score and
summarise+verdict as three assets.
"""

from __future__ import annotations

import dataclasses
import hashlib
import multiprocessing
import queue
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from eval_pipeline.core.cases import DatasetError, GoldenCase, dataset_version, select_tier
from eval_pipeline.core.options import OnUndecided, OptionsError, RunOptions, budget_of
from eval_pipeline.core.prompts import PromptVersion
from eval_pipeline.core.redact import redact
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.running.budget import BudgetGuard, Spending
from eval_pipeline.core.running.failures import NOT_THE_AGENT
from eval_pipeline.core.running.memo import CachePolicy, MemoScope, MemoWriter, check_policy
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import (
    Job,
    Progress,
    RunnerConfig,
    jobs_of,
    run_agent,
    run_sync,
)
from eval_pipeline.core.running.shards import Shard, auto_count, split
from eval_pipeline.core.scoring import gate as gating
from eval_pipeline.core.scoring.apply import item_results, run_level, score_items
from eval_pipeline.core.scoring.reducers import repeat_values
from eval_pipeline.core.scoring.rows import PairedRow, PrimaryFloorRow
from eval_pipeline.core.scoring.summary import Summary, judge_spending, summarize
from eval_pipeline.core.scoring.thresholds import (
    CheckOutcome,
    ThresholdCheck,
    Thresholds,
    evaluate_thresholds,
)
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suite import Suite


class Labels(Protocol):
    """Where label positions come from (a prompt registry: Langfuse or local files)."""

    def label_versions(self, labels: Iterable[str]) -> dict[str, dict[str, int]]: ...


EXIT_UNDECIDED = 3  # the gate could not tell, and the run's on_undecided is "fail"
FAILURES_TIER = "failures"  # the tier of a run on production failures (plan(cases=…))


class BaselineMissing(ValueError):
    """A baseline was asked for and there is none; the message says how to make one."""


@dataclass
class RunPlan:
    """Everything decided before the first model call (nothing written yet)."""

    suite: Suite
    prompt: PromptVersion | None
    run: RunRecord
    all_cases: list[GoldenCase]
    cases: list[GoldenCase]  # the tier's
    runner: RunnerConfig
    cache: CachePolicy
    request: RunOptions
    shards: list[Shard]
    repeats_of: Mapping[str, int] = field(default_factory=dict)  # cases run more often

    @property
    def n_items(self) -> int:
        return len(self.jobs)

    @property
    def jobs(self) -> list[Job]:
        """The plan's items, case by case: each case's repeats (``runner.repeats``, or as
        many as ``repeats_of`` gives it: a sequential run's flaky cases)."""
        return jobs_of(self.cases, self.runner.repeats, self.repeats_of)


@dataclass(frozen=True)
class SequentialReport:
    """How far a sequential run went: decided (or not) after ``cases`` of the suite's."""

    cases: int
    suite_cases: int
    decided: bool
    model_calls: int
    repeated: tuple[str, ...] = ()  # flaky cases run more often, up to ``repeats`` (``Repeats``)
    repeats: int = 1
    repeats_note: str = ""  # why no case was repeated, when none could be

    def line(self) -> str:
        said = "decided" if self.decided else "undecided"
        flaky = ""
        if self.repeated:
            flaky = f", {len(self.repeated)} flaky ones up to {self.repeats} times each"
        return (f"{said} after {self.cases} of {self.suite_cases} cases{flaky} "
                f"({self.model_calls} model calls)")  # fmt: skip

    def repeats_line(self, shown: int = 10) -> str | None:
        """The flaky cases it repeated, named; or, when it stayed undecided, why none."""
        if self.repeated:
            more = f" and {len(self.repeated) - shown} more" if len(self.repeated) > shown else ""
            return (f"flaky in the baseline, run up to {self.repeats} times each: "
                    f"{', '.join(self.repeated[:shown])}{more}")  # fmt: skip
        if not self.decided and self.repeats_note:
            return f"no case repeated: {self.repeats_note}"
        return None


@dataclass
class EvalResult:
    """The outcome of one run: what it scored, which checks failed, the gate's evidence."""

    run: RunRecord
    summary: Summary
    checks: list[ThresholdCheck]
    thresholds: Thresholds
    outputs: Sequence[ItemOutput]
    scores: Sequence[ItemScore]
    gate: gating.GateReport | None = None
    gate_note: str | None = None  # why there is no gate (no baseline, not requested)
    warnings: list[str] = field(default_factory=list)
    charts: dict[str, Path] = field(default_factory=dict)
    cases: Sequence[GoldenCase] = ()  # the run's cases (the tier's)
    problems: list[str] = field(default_factory=list)  # found by the caller (a recording)
    sequential: SequentialReport | None = None  # a sequential run: how far it went

    @property
    def failed(self) -> list[str]:
        names = [c.name for c in self.checks if c.blocking and not c.outcome.passed]
        if self.gate is not None:
            names += [c.name for c in self.gate.checks if c.blocking_failure]
        if self.agent_failure:
            names.append("agent_errors")
        return names

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"

    @property
    def undecided(self) -> list[str]:
        """The gated metrics the gate could not decide, each with what would decide it
        (empty when every gated metric was decided, or there is no gate)."""
        metrics = [
            f"{row.metric}: {row.note or f'Δ {row.delta:+.3f} is within reach of the margin'}"
            for row in self.undecided_rows
        ]
        if not self.run.stopped:
            return metrics
        if metrics or self.sequential is None or self.gate is None:
            # only the sequential gate's decisions hold on the cases a budget let run
            return [*metrics, f"the budget stopped the run: {self.run.stopped}"]
        return []

    @property
    def undecided_rows(self) -> list[PairedRow]:
        """The paired gate's rows of the gated metrics it could not decide."""
        checks = [c for c in self.gate.checks if c.undecided] if self.gate else []
        return [row for check in checks for row in check.rows
                if isinstance(row, PairedRow) and row.outcome == "warn"]  # fmt: skip

    @property
    def verdict(self) -> str:
        """PASS, FAIL, UNDECIDED or ERROR: what the run says about the agent (see
        ``exit_code``). UNDECIDED: no check failed, but the gate could not tell whether a
        gated metric got worse; it is never reported as a pass."""
        if self.errors:
            return "ERROR"
        return "FAIL" if self.failed else "UNDECIDED" if self.undecided else "PASS"

    @property
    def on_undecided(self) -> OnUndecided:
        return RunOptions(**self.run.options).on_undecided

    @property
    def exit_code(self) -> int:
        """0 PASS, 1 FAIL (the agent got worse or is below a floor), 2 ERROR, 3 UNDECIDED
        (0 when the run's ``on_undecided`` is ``warn``)."""
        undecided = EXIT_UNDECIDED if self.on_undecided == "fail" else 0
        return {"PASS": 0, "FAIL": 1, "ERROR": 2, "UNDECIDED": undecided}[self.verdict]

    @property
    def errors(self) -> list[str]:
        """Why this run cannot say whether the agent got worse (the verdict is ERROR):
        items it could not measure, scores of a deciding metric an evaluator could not
        give, and the caller's problems. Never a pass."""
        deciding = self.thresholds.deciding_metrics
        return [*self.problems, *unmeasured(self.outputs),
                *unscored([s for s in self.scores if s.evaluator in deciding])]  # fmt: skip

    @property
    def notes(self) -> list[str]:
        """What the reader should know that does not change the verdict: a model that
        never called the tools it was offered, scores of other metrics that could not be
        given."""
        deciding = self.thresholds.deciding_metrics
        hint = [self.hint] if self.hint else []
        return [*hint, *unscored([s for s in self.scores if s.evaluator not in deciding])]

    @property
    def hint(self) -> str | None:
        """Said with the verdict: the agent's model was offered tools in many calls and
        never called one (an endpoint that ignores tools, not a prompt that got worse)."""
        offered, answered = self.summary.calls_with_tools, self.summary.tool_call_answers
        if offered < 3 or answered:
            return None
        return (
            f"{answered} of {offered} model calls with tools returned a tool call: the "
            "endpoint may ignore tools; see `eval-pipeline doctor` / EVAL_LLM_COMPAT"
        )

    @property
    def agent_failure(self) -> str | None:
        """Most items failed with the agent's own errors (it looped, it raised): a broken
        agent, which no threshold may pass; None otherwise."""
        failed = [o for o in self.outputs if o.error and o.fault == "agent"]
        items = len(self.outputs)
        if items == 0 or len(failed) * 2 <= items:
            return None
        return f"{len(failed)} of {items} items failed with the agent's own errors " \
               f"({_kinds(failed)})"  # fmt: skip


def unmeasured(outputs: Sequence[ItemOutput]) -> list[str]:
    """The run's items that say nothing about the agent (failures outside it:
    infrastructure, configuration; core/running/failures.py): the kinds, the first one."""
    items = [o for o in outputs if o.error and o.fault in NOT_THE_AGENT]
    if not items:
        return []
    misses = [o for o in items if o.error_kind in ("replay miss", "escaped call")]
    what = "made requests the recordings cannot answer" if len(misses) == len(items) \
        else "failed for reasons outside the agent"  # fmt: skip
    return [f"{len(items)} of {len(outputs)} items {what} ({_kinds(items)}); first, "
            f"{items[0].item_id}: {items[0].error}"]  # fmt: skip


def unscored(scores: Sequence[ItemScore]) -> list[str]:
    """Scores an evaluator could not give, by evaluator and kind, with the first reason."""
    failed = [s for s in scores if s.error_kind]
    if not failed:
        return []
    return [f"{len(failed)} scores could not be given ({_kinds(failed)}); first, "
            f"{failed[0].item_id}: {failed[0].comment}"]  # fmt: skip


def _kinds(failed: Sequence[ItemOutput | ItemScore]) -> str:
    """ "kind ×n, …", the most frequent first (a score's kind is named by its evaluator)."""
    counts: dict[str, int] = {}
    for f in failed:
        kind = f.error_kind or "error"
        if isinstance(f, ItemScore):
            kind = f"{f.evaluator}: {kind}"
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{kind} ×{n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def new_run_id(suite: str, prompt_key: str) -> str:
    return f"{suite}-{prompt_key}-{uuid.uuid4().hex[:12]}"


def prompt_key(prompt: PromptVersion | None) -> str:
    """The prompt_version partition of a run: vN, or v0 for a suite without a prompt."""
    return prompt.partition_key if prompt is not None else "v0"


# --- plan -----------------------------------------------------------------------------
def plan(
    suite: Suite,
    prompt: PromptVersion | None,
    model_params: dict[str, Any],
    request: RunOptions,
    *,
    run_id: str | None = None,
    dagster_run_id: str | None = None,
    notes: Sequence[str] = (),
    cases: Sequence[GoldenCase] | None = None,
) -> RunPlan:
    """Load and select the cases and describe the run (raises DatasetError); writes nothing.
    ``notes`` are kept with the run (e.g. a setting that overrode the prompt's). The
    baseline is decided next, by ``with_baseline``. Given ``cases`` (production failures,
    core/traces/rerun.py), the run is on those, not on the suite's dataset: its tier is
    "failures", which no gate, trend or sensor counts as an evaluation of the version."""
    noticed: list[str] = []
    all_cases = list(cases) if cases is not None else suite.load_cases(noticed)
    selected = all_cases if cases is not None else select_tier(all_cases, request.tier)
    repeats = request.repeats or suite.repeats
    _check_max_repeats(suite, request, repeats)
    key = prompt_key(prompt)
    run = RunRecord(
        run_id=run_id or new_run_id(suite.name, key),
        suite=suite.name,
        prompt_name=prompt.name if prompt else "",
        prompt_version=key,
        prompt_hash=prompt.content_hash if prompt else "",
        prompt_config=dict(prompt.config) if prompt else {},
        dataset_version=dataset_version(all_cases),  # the whole dataset; the tier selects
        model=str(model_params.get("model", "")),
        model_params=model_params,
        tier=request.tier if cases is None else FAILURES_TIER,
        repeats=repeats,
        agent_version=suite.code_version,
        evaluator_versions=suite.versions_of_evaluators(),
        dagster_run_id=dagster_run_id,
        notes=[*notes, *_source_note(suite, cases is None), *_fields_note(noticed)],
        options=request.model_dump(mode="json"),
        code_commit=suite.code_commit,
    )
    runner = RunnerConfig(
        concurrency=request.concurrency, repeats=repeats, timeout_s=request.timeout_s,
        requests_per_second=request.requests_per_second,
        base_seed=int(model_params.get("seed") or 0),
    )  # fmt: skip
    count = request.shards or auto_count(len(selected) * repeats, request.concurrency)
    shard_list = split(count, len(selected) * repeats, request.concurrency,
                       request.requests_per_second)  # fmt: skip
    policy = check_policy(request.cache)
    if not suite.memoize and policy != "off":
        policy = "off"
        run.notes.append(
            f"suite {suite.name}: nothing says when its agent service changed, so no output "
            "is reused from the memo (give the suite a `version:`)"
        )
    return RunPlan(suite, prompt, run, all_cases, selected, runner, policy, request, shard_list)


def _check_max_repeats(suite: Suite, request: RunOptions, repeats: int) -> None:
    """``max_repeats`` (``Repeats``) needs the sequential gate, at least the run's own
    repeats, and per-case means: over more repeats, pass_at_k, pass_all_k, max and median
    measure something else, so a repeated case would not be measured like the others."""
    most = request.max_repeats
    if most is None:
        return
    reducer = suite.thresholds.regression.reducer
    problems = []
    if request.gate != "sequential":
        problems.append("flaky cases are repeated by the sequential gate: drop --gate fixed")
    if most < repeats:
        problems.append(f"it must be at least the run's repeats per case ({repeats})")
    if reducer != "mean" and most > repeats:
        problems.append(f"suite {suite.name} reduces repeats by {reducer!r}, which measures "
                        "a case with more repeats differently: use reducer: mean in its "
                        "thresholds, or leave --max-repeats out")  # fmt: skip
    if problems:
        raise OptionsError(f"max_repeats={most}: " + "; ".join(problems))


def _source_note(suite: Suite, on_dataset: bool) -> list[str]:
    """Where the cases came from when not from a folder: kept with the run and shown in
    its report, next to the dataset version it produced."""
    if not on_dataset or suite.dataset_ref is None:
        return []
    return [f"cases from the Langfuse dataset {suite.dataset_ref}"]


def _fields_note(noticed: Sequence[str], shown: int = 3) -> list[str]:
    """One note for the case fields no evaluator reads (the first few, whole)."""
    if not noticed:
        return []
    more = f"; … and {len(noticed) - shown} more" if len(noticed) > shown else ""
    return [f"{len(noticed)} case field(s) no evaluator of the suite reads (a typo, or an "
            f"evaluator missing from the suite): {'; '.join(noticed[:shown])}{more}"]  # fmt: skip


def baseline_for(
    store: ResultsStore, suite: Suite, run: RunRecord, label: str, labels: Labels | None
) -> tuple[RunRecord | None, str]:
    """The run to compare ``run`` with: the latest complete full-tier run of the version
    ``label`` points to (for a suite without a prompt: of its own, earlier). Else None and
    why."""
    if suite.prompt_name is None or labels is None:
        version = run.prompt_version
    else:
        number = labels.label_versions([label]).get(suite.prompt_name, {}).get(label)
        if number is None:
            return None, f"prompt {suite.prompt_name} has no label {label!r}: no baseline"
        version = f"v{number}"
    baseline = gating.find_baseline(store, run, version)
    if baseline is None:
        what = f"{suite.name} {label} ({version})"
        return None, f"no baseline yet: no complete full-tier run of {what}"
    return baseline, ""


def with_baseline(store: ResultsStore, plan_: RunPlan, labels: Labels | None) -> RunPlan:
    """The plan with its baseline, decided before any model call and kept with the run
    (``RunRecord.baseline_run_id``), the same way from every entry point:

    - asked for (``baseline_run_id``, or ``baseline_label``: ``--baseline``): it must exist
      and be comparable, else BaselineMissing / NotComparable, an error;
    - else the suite's ``regression.baseline_label`` (production): the latest complete
      full-tier run of the version it points to (of this version itself: its previous
      full run). None yet (or the registry is out of reach) leaves the run without a
      gate, and a run note says why; one that is not comparable (another dataset,
      other items) is kept, and the gate FAILs "not comparable": it cannot tell."""
    request, run, suite = plan_.request, plan_.run, plan_.suite
    asked = request.baseline_run_id is not None or request.baseline_label is not None
    if request.baseline_run_id is not None:
        baseline = store.get_run(request.baseline_run_id)
        if baseline is None or baseline.status != "complete" or baseline.suite != run.suite:
            found = f"is {baseline.status} ({baseline.suite})" if baseline else "is not there"
            raise BaselineMissing(f"baseline run {request.baseline_run_id} {found} in the "
                                  f"results store: name a complete run of {run.suite}")  # fmt: skip
    else:
        label = request.baseline_label or suite.thresholds.regression.baseline_label
        try:
            baseline, reason = baseline_for(store, suite, run, label, labels)
        except Exception as exc:  # the registry is out of reach: no gate, and why
            if asked:
                raise
            baseline, reason = None, f"baseline unknown: prompt registry unavailable ({exc})"
        if baseline is None:
            if asked:
                how = (f"run `eval-pipeline run --suite {run.suite} --label {label}` first"
                       if "no baseline yet" in reason else
                       "label a prompt version first")  # fmt: skip
                raise BaselineMissing(f"{reason} in the results store: {how}")
            return _without_gate(plan_, reason)
    base_items = {o.item_id for o in store.read_outputs(baseline.run_id)}
    items = {c.id for c in plan_.cases}
    problems = gating.comparability_problems(baseline, run, base_items, items)
    if problems and asked:
        raise gating.NotComparable(
            f"not comparable with baseline run {baseline.run_id}: " + "; ".join(problems)
        )
    # not comparable and not asked for: the gate FAILs "not comparable" (verdict): it cannot tell
    run.baseline_run_id = baseline.run_id
    return plan_


def _without_gate(plan_: RunPlan, why: str) -> RunPlan:
    plan_.run.notes.append(f"{_NO_GATE}{why}")
    return plan_


_NO_GATE = "gate: "  # the run note that says why a run has no gate


def decided_baseline(store: ResultsStore, run: RunRecord) -> tuple[RunRecord | None, str]:
    """The baseline ``with_baseline`` chose for ``run`` when it was planned, or None and
    why (the verdict stage reads it)."""
    if run.baseline_run_id is not None:
        baseline = store.get_run(run.baseline_run_id)
        if baseline is not None:
            return baseline, ""
        return None, f"baseline run {run.baseline_run_id} is no longer in the results store"
    why = next((n.removeprefix(_NO_GATE) for n in run.notes if n.startswith(_NO_GATE)), None)
    return None, why or "no baseline was decided when this run was planned"


# --- produce, score, summarise --------------------------------------------------------
def produce(
    store: ResultsStore,
    plan_: RunPlan,
    agent: Agent,
    *,
    shard: Shard | None = None,
    prices: PriceTable | None = None,
    progress: Progress | None = None,
    batch: bool = False,
) -> list[ItemOutput]:
    """Run the agent on the cases the memo cannot answer (see core/running/memo.py);
    reused outputs name the run that produced them in ``source_run_id``. With ``shard``,
    only that shard's items, under its share of the budget: its outputs replace only its
    own items in the store, so shards may run in any order, in any process. With
    ``batch`` (a sequential run's further cases), likewise: they are added to the run's."""
    run, cases, runner, policy = plan_.run, plan_.cases, plan_.runner, plan_.cache
    jobs = plan_.jobs
    if shard is not None:
        jobs = shard.select(jobs)
        runner = dataclasses.replace(runner, concurrency=shard.concurrency,
                                     requests_per_second=shard.requests_per_second)  # fmt: skip
    with failure_recorded(store, run.run_id):
        if shard is not None:
            _same_dataset(store, run)
        scope = MemoScope.of(run)
        keys = {(c.id, r): scope.key(c, r) for c, r in jobs}
        known = _memoized(store, keys, policy, run.run_id)
        guard = _budget_guard(store, plan_, shard=shard is not None, batch=batch)
        writer = None
        if policy != "off":
            writer = MemoWriter(partial(store.memo_put, run.suite, run.run_id), keys)

        async def produce_all() -> list[ItemOutput]:
            try:
                return await run_agent(
                    agent,
                    cases,
                    runner,
                    prices=prices,
                    progress=progress,
                    known=known,
                    on_result=writer,
                    jobs=jobs,
                    guard=guard,
                )
            finally:
                if writer is not None:
                    await writer.flush()
                if (close := getattr(agent, "aclose", None)) is not None:
                    await close()

        outputs = run_sync(produce_all())
        if guard is not None and guard.skipped:
            store.stop_run(run.run_id, f"{guard.reached}: {guard.skipped} of {len(jobs)} "
                                       "items not started")  # fmt: skip
        if shard is None and not batch:
            store.write_outputs(run.run_id, outputs)
        else:
            store.write_outputs(run.run_id, outputs, items=list(keys))
        ran = len(known) < len(jobs)  # (outputs all from the memo: the agent never ran)
        if ran and plan_.suite.prompt_name and getattr(agent, "prompt_read", True) is False:
            store.add_notes(run.run_id, [
                f"the agent never read the prompt under test ({plan_.suite.prompt_name}): "
                "prompt versions and labels make no difference to it (read ctx.prompt)"
            ])  # fmt: skip
    return outputs


def _budget_guard(
    store: ResultsStore, plan_: RunPlan, *, shard: bool, batch: bool
) -> BudgetGuard | None:
    """The run's budget as the runner spends it: a shard gets its share; a sequential
    run's further batch starts from what the run has spent so far (judges included)."""
    budget = budget_of(plan_.request)
    if not budget:
        return None
    if shard:
        return BudgetGuard(budget.share(len(plan_.shards)))
    run_id = plan_.run.run_id
    spent = Spending.of_run(store.read_outputs(run_id), store.read_scores(run_id))
    return BudgetGuard(budget, spent if batch else None)


def _same_dataset(store: ResultsStore, run: RunRecord) -> None:
    """A shard plans the run again in its own process: its cases must be the run's."""
    stored = store.get_run(run.run_id)
    if stored is None:
        raise DatasetError([f"run {run.run_id!r} is not in the results store"])
    if stored.dataset_version != run.dataset_version:
        raise DatasetError([
            f"the dataset of {run.suite} changed while run {run.run_id} was in progress "
            f"(version {stored.dataset_version} → {run.dataset_version}); start a new run"
        ])  # fmt: skip


def check_complete(
    store: ResultsStore, run: RunRecord, cases: Sequence[GoldenCase]
) -> list[ItemOutput]:
    """The run's outputs once every shard has finished: one per (case, repeat) (the store's
    key forbids two), or an error naming what is missing (the run is marked failed)."""
    with failure_recorded(store, run.run_id):
        outputs = store.read_outputs(run.run_id)
        wanted = {(c.id, r) for c in cases for r in range(run.repeats)}
        found = {(o.item_id, o.repeat) for o in outputs}
        stopped = (store.get_run(run.run_id) or run).stopped  # a budget: items not started
        problems = [f"{len(v)} {what} (first: {min(v)[0]} repeat {min(v)[1]})"
                    for what, v in (("missing", set() if stopped else wanted - found),
                                    ("not in the run", found - wanted))
                    if v]  # fmt: skip
        if problems:
            raise RuntimeError(f"run {run.run_id}: the shards did not produce one "
                               f"output per item: {'; '.join(problems)}")  # fmt: skip
    return outputs


def _memoized(
    store: ResultsStore, keys: dict[tuple[str, int], str], policy: CachePolicy, run_id: str
) -> dict[tuple[str, int], ItemOutput]:
    """``reuse``: any memoized output; ``refresh``: only this run's own (a crashed attempt)."""
    if policy == "off":
        return {}
    found = store.memo_get(keys.values(), run_id=run_id if policy == "refresh" else None)
    return {item: found[key] for item, key in keys.items() if key in found}


def score(
    store: ResultsStore,
    run_id: str,
    suite: Suite,
    cases: Sequence[GoldenCase],
    *,
    prices: PriceTable | None = None,
    batch: bool = False,
) -> list[ItemScore]:
    """Score every output; judges (model-backed evaluators) run under the run's own
    concurrency, rate and timeout (its options, kept with the run). With ``batch``, only
    the outputs of ``cases`` (a sequential run's further cases), added to the run's."""
    with failure_recorded(store, run_id):
        run = store.get_run(run_id)
        options = RunOptions(**run.options) if run is not None else RunOptions()
        outputs = store.read_outputs(run_id)
        if batch:
            wanted = {c.id for c in cases}
            outputs = [o for o in outputs if o.item_id in wanted]
        scores = score_items(cases, outputs, suite.evaluators,
                             categories=suite.thresholds.categories,
                             judges=judge_settings(options), prices=prices)  # fmt: skip
        store.write_scores(run_id, scores, add=batch)
    return scores


def judge_settings(options: RunOptions) -> RunnerConfig:
    """How a run's LLM judges are called: its own concurrency, timeout and rate."""
    return RunnerConfig(concurrency=options.concurrency, timeout_s=options.timeout_s,
                        requests_per_second=options.requests_per_second)  # fmt: skip


def summarise(
    store: ResultsStore, run_id: str, suite: Suite, cases: Sequence[GoldenCase]
) -> Summary:
    with failure_recorded(store, run_id):
        outputs, scores = store.read_outputs(run_id), store.read_scores(run_id)
        run_evals = run_level(suite.run_evaluators, item_results(outputs, scores))
        regression = suite.thresholds.regression
        run = store.get_run(run_id)
        summary = summarize(cases, outputs, scores, run_evals,
                            pass_metric=suite.thresholds.primary_metric,
                            pass_at=regression.pass_threshold,
                            repeats=run.repeats if run else None)  # fmt: skip
        store.complete_run(run_id, summary)
    return summary


# --- verdict ----------------------------------------------------------------------------
def verdict(
    store: ResultsStore, run: RunRecord, suite: Suite, cases: Sequence[GoldenCase],
    summary: Summary,
) -> EvalResult:  # fmt: skip
    """The thresholds, then the paired gate against the baseline chosen when the run was
    planned (``with_baseline``), with the run's own options (margin, min_primary): read
    from the results store, so every entry point reaches the same verdict on a stored run."""
    outputs, scores = store.read_outputs(run.run_id), store.read_scores(run.run_id)
    options = RunOptions(**run.options)
    thresholds = suite.thresholds
    checks = evaluate_thresholds(summary, scores, thresholds)
    if options.min_primary is not None:
        checks.append(_primary_floor(summary, thresholds.primary_metric, options.min_primary))
    result = EvalResult(run, summary, checks, thresholds, outputs, scores,
                        warnings=list(run.notes), cases=list(cases))  # fmt: skip
    baseline, why_not = decided_baseline(store, run)
    if baseline is None:
        result.gate_note = why_not
        return result
    categories = {c.id: c.category for c in cases}
    rescored = bool(gating.evaluator_changes(baseline, run))
    try:
        base_data = baseline_data(
            store, baseline, suite, cases, rescore=rescored, judges=judge_settings(options)
        )
        sequential = None
        if options.gate == "sequential":
            sequential = gating.Sequential([c.id for c in cases])
        result.gate = gating.compare_runs(baseline, run, base_data, (outputs, scores),
                                          thresholds, categories, margin=options.margin,
                                          rescored=rescored, sequential=sequential)  # fmt: skip
        if rescored and (spent := judge_spending(base_data[1]))["judge_calls"]:
            result.gate.notes.append(
                f"re-scoring the baseline made {spent['judge_calls']} LLM judge call(s) "
                f"(${spent['judge_cost_usd']:.4f})"
            )
    except gating.NotComparable as exc:
        result.gate = gating.not_comparable_report(run, baseline, str(exc))
    return result


def baseline_data(
    store: ResultsStore, baseline: RunRecord, suite: Suite, cases: Sequence[GoldenCase],
    *, rescore: bool, judges: RunnerConfig | None = None,
) -> tuple[list[ItemOutput], list[ItemScore]]:  # fmt: skip
    """The baseline's outputs and scores. With ``rescore`` (its evaluators were other
    versions), its stored outputs of these cases are scored again with the suite's
    evaluators now (LLM judges called as ``judges`` says): comparable with the candidate,
    and no agent call is made."""
    outputs = store.read_outputs(baseline.run_id)
    if not rescore:
        return outputs, store.read_scores(baseline.run_id)
    wanted = {c.id for c in cases}
    outputs = [o for o in outputs if o.item_id in wanted]
    return outputs, score_items(
        cases, outputs, suite.evaluators, judges=judges, categories=suite.thresholds.categories
    )


def _primary_floor(summary: Summary, metric: str, minimum: float) -> ThresholdCheck:
    value = summary.metric(metric)
    passed = value is not None and value >= minimum
    text = f"{metric} mean {value} {'≥' if passed else '<'} --threshold {minimum}"
    row = PrimaryFloorRow(metric=metric, mean=value, minimum=minimum, ok=passed)
    return ThresholdCheck("threshold", CheckOutcome(passed, text, [row]), True)


def evaluate(
    store: ResultsStore,
    plan_: RunPlan,
    agent: Agent,
    *,
    prices: PriceTable | None = None,
    progress: Progress | None = None,
    shard_worker: ShardWorker | None = None,
) -> EvalResult:
    """Every stage of a planned run (the CLI, the Python API): the agent's items in this
    process, or, for a plan of several shards, in one ``shard_worker`` process per shard."""
    store.create_run(plan_.run)
    if len(plan_.shards) == 1:
        produce(store, plan_, agent, prices=prices, progress=progress)
    elif shard_worker is None:
        raise ValueError(f"{len(plan_.shards)} shards need a shard worker to run them")
    else:
        produce_in_processes(store, plan_, shard_worker, progress=progress)
    suite, run_id = plan_.suite, plan_.run.run_id
    cases = cases_run(store, run_id, plan_.cases)
    score(store, run_id, suite, cases, prices=prices)
    summary = summarise(store, run_id, suite, cases)
    result = verdict(store, store.get_run(run_id) or plan_.run, suite, cases, summary)
    if plan_.request.gate == "sequential":
        result = go_on_until_decided(store, plan_, agent, result, prices=prices,
                                     progress=progress)  # fmt: skip
    return result


MIN_BATCH = 5  # a sequential run's further cases come at least this many at a time


def draw_order(cases: Sequence[GoldenCase], dataset: str) -> list[GoldenCase]:
    """The suite's cases in the order a sequential run draws them: a random order seeded
    by the dataset's version, so every run on one dataset draws the same cases (the memo
    answers a rerun) and a change to the dataset draws anew."""
    return sorted(cases, key=lambda c: hashlib.sha256(f"{dataset}:{c.id}".encode()).digest())


def go_on_until_decided(
    store: ResultsStore, plan_: RunPlan, agent: Agent, result: EvalResult, *,
    prices: PriceTable | None = None, progress: Progress | None = None,
) -> EvalResult:  # fmt: skip
    """The sequential gate: while a gated metric is undecided (``goes_on``), run
    the suite's further cases, in batches (as many as the tier has, at least MIN_BATCH),
    in ``draw_order``, and decide again; stop when decided, or when the budget or the
    cases the baseline has run out. Once the cases left look too few to decide
    (``runs_short``), each further case the baseline found flaky is run ``max_repeats``
    times (``Repeats``). The result says after how many cases and model calls."""
    run_id, suite = plan_.run.run_id, plan_.suite
    baseline, _ = decided_baseline(store, result.run)  # as stored (a step may plan again)
    cases = list(result.cases)  # the tier's, less any a budget left unstarted
    if baseline is None:  # no gate: nothing to decide
        return result
    paired = {o.item_id for o in store.read_outputs(baseline.run_id)}
    done = {c.id for c in [*plan_.cases, *cases]}
    rest = [c for c in draw_order(plan_.all_cases, plan_.run.dataset_version)
            if c.id not in done and c.id in paired]  # fmt: skip
    size = max(MIN_BATCH, len(cases))
    repeats = Repeats.planned(store, baseline, plan_)
    budget = budget_of(plan_.request)
    while goes_on(result, plan_.request) and rest:
        if reached := budget.reached(Spending.of_run(result.outputs, result.scores)):
            store.stop_run(run_id, f"{reached}: {len(rest)} further case(s) not started")
            result.run = store.get_run(run_id) or result.run
            break
        more = repeats.of(rest[:size]) if runs_short(result, len(rest)) else {}
        batch, rest = rest[:size], rest[size:]
        produce(store, dataclasses.replace(plan_, cases=batch, repeats_of=more), agent,
                prices=prices, progress=progress, batch=True)  # fmt: skip
        batch = cases_run(store, run_id, batch)
        score(store, run_id, suite, batch, prices=prices, batch=True)
        cases += batch
        summary = summarise(store, run_id, suite, cases)
        result = verdict(store, store.get_run(run_id) or plan_.run, suite, cases, summary)
    answers = Counter(o.item_id for o in result.outputs)  # (what ran: a budget may stop)
    result.sequential = SequentialReport(
        cases=len(cases), suite_cases=len(plan_.all_cases), decided=not result.undecided,
        model_calls=Spending.of_run(result.outputs, result.scores).calls,
        repeated=tuple(c.id for c in cases if answers[c.id] > plan_.runner.repeats),
        repeats=repeats.most, repeats_note=repeats.note,
    )  # fmt: skip
    return result


@dataclass(frozen=True)
class Repeats:
    """Variance-aware repeats of a sequential run: the cases its baseline found flaky (their
    repeats disagree on a gated metric) are run ``most`` times instead of the run's
    repeats, once the run ``runs_short``. Where the paired difference is noisy, more
    answers narrow it; elsewhere they would only cost. The choice is made from the
    baseline, and before the case runs: choosing by the candidate's own answers (another
    repeat where it failed, or disagreed with itself) would bias its per-case means, and
    the gate with them. ``flaky`` empty: no repeats, and ``note`` says why."""

    flaky: frozenset[str]
    most: int
    note: str = ""

    @classmethod
    def planned(cls, store: ResultsStore, baseline: RunRecord, plan_: RunPlan) -> Repeats:
        """``max_repeats`` (default: as many as the baseline ran each case) for the cases
        the baseline's repeats disagree on."""
        asked, repeats = plan_.request.max_repeats, plan_.runner.repeats
        if asked is not None and asked <= repeats:  # turned off
            return cls(frozenset(), repeats)
        if baseline.repeats < 2:
            return cls(frozenset(), repeats, "the baseline ran each case once: nothing says "
                       "which cases are flaky (record it with --repeat 3)")  # fmt: skip
        most = asked or baseline.repeats
        if most <= repeats:
            return cls(frozenset(), repeats, f"the run gives each case as many answers as "
                       f"the baseline did ({baseline.repeats}); --max-repeats above that "
                       "repeats its flaky cases")  # fmt: skip
        if plan_.suite.thresholds.regression.reducer != "mean":
            return cls(frozenset(), repeats, "the reducer is not mean: a case with more "
                       "repeats would be measured differently")  # fmt: skip
        scores = store.read_scores(baseline.run_id)
        metrics = plan_.suite.thresholds.gated_metrics
        values = {m: repeat_values(scores, m) for m in metrics}
        flaky = frozenset(item for m in metrics for item, v in values[m].items() if len(set(v)) > 1)
        why = "" if flaky else "the baseline's repeats agree on every case"
        return cls(flaky, most, why)

    def of(self, cases: Sequence[GoldenCase]) -> dict[str, int]:
        """How often each of ``cases`` runs when it is not the run's repeats."""
        return {c.id: self.most for c in cases if c.id in self.flaky}


def runs_short(result: EvalResult, left: int) -> bool:
    """Whether the cases ``left`` look too few to decide: for an undecided gated metric,
    the gate's guess of the pairs that would decide it exceeds them, or it cannot guess."""
    return any(row.cases_needed is None or row.cases_needed - row.n > left
               for row in result.undecided_rows)  # fmt: skip


def goes_on(result: EvalResult, request: RunOptions) -> bool:
    """Whether a sequential run draws more cases: its gate is undecided, nothing it could
    not measure, and nothing failed (under ``sequential_until="decided"``, only the gate's
    own failures count: a failed threshold does not decide the gate)."""
    failed = result.failed
    if request.sequential_until == "decided":
        thresholds = {c.name for c in result.checks}
        failed = [name for name in failed if name not in thresholds]
    return bool(result.undecided) and not failed and not result.errors


def cases_run(store: ResultsStore, run_id: str, cases: Sequence[GoldenCase]) -> list[GoldenCase]:
    """The cases of ``cases`` the run has outputs for: all of them, unless its budget
    stopped it before some were started (those are left out of its scores and verdict)."""
    run = store.get_run(run_id)
    if run is None or not run.stopped:
        return list(cases)
    ran = {o.item_id for o in store.read_outputs(run_id)}
    return [c for c in cases if c.id in ran]


class ShardWorker(Protocol):
    """Runs one shard in a fresh process: plans the run again (same run id), builds the
    agent there and calls ``produce(..., shard=shard)``; reports progress on ``updates`` as
    (shard index, done, total). Must pickle (it crosses into the worker process)."""

    def __call__(self, shard: Shard, updates: ShardUpdates) -> None: ...


class ShardUpdates(Protocol):
    def put(self, item: tuple[int, int, int]) -> None: ...


def shard_progress(shard: Shard, updates: ShardUpdates, every_s: float = 0.5) -> Progress:
    """A worker's progress callback: sends (shard, done, total) at most every ``every_s``."""
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= every_s:
            last[0] = now
            updates.put((shard.index, done, total))

    return report


def produce_in_processes(
    store: ResultsStore, plan_: RunPlan, worker: ShardWorker, *, progress: Progress | None = None
) -> list[ItemOutput]:
    """Each shard in a spawned process of its own (a clean interpreter, as a Dagster step
    gets), all at once; then the run's outputs are checked complete (``check_complete``)."""
    context = multiprocessing.get_context("spawn")
    with failure_recorded(store, plan_.run.run_id), context.Manager() as manager:
        updates = manager.Queue()
        done = [0] * len(plan_.shards)
        with ProcessPoolExecutor(len(plan_.shards), mp_context=context) as pool:
            futures = [pool.submit(worker, shard, updates) for shard in plan_.shards]
            while not all(f.done() for f in futures) or not updates.empty():
                try:
                    index, shard_done, _ = updates.get(timeout=0.2)
                except queue.Empty:
                    continue
                done[index] = shard_done
                if progress:
                    progress(sum(done), plan_.n_items)
            for future in futures:
                future.result()  # a shard that failed fails the run (its error, re-raised)
    return check_complete(store, plan_.run, plan_.cases)


def cases_of_run(store: ResultsStore, run_id: str, suite: Suite) -> list[GoldenCase]:
    """The cases a run was started on, reloaded (refused if the dataset changed since), in
    the order its gate saw them: the tier's (less any a budget left unstarted), then those
    a sequential gate went on to, in ``draw_order``."""
    run = store.get_run(run_id)
    if run is None:
        raise DatasetError([f"run {run_id!r} is not in the results store"])
    cases = suite.load_cases()
    if dataset_version(cases) != run.dataset_version:
        raise DatasetError([
            f"{suite.dataset_dir}: the dataset changed while run {run_id} was in progress "
            f"(version {run.dataset_version} → {dataset_version(cases)}); start a new run"
        ])  # fmt: skip
    tier = select_tier(cases, run.tier)
    ran, first = {o.item_id for o in store.read_outputs(run_id)}, {c.id for c in tier}
    further = [c for c in draw_order(cases, run.dataset_version)
               if c.id in ran and c.id not in first]  # fmt: skip
    return cases_run(store, run_id, tier) + further


@contextmanager
def failure_recorded(store: ResultsStore, run_id: str) -> Iterator[None]:
    """A stage that raises marks its run 'failed' with the (redacted) reason, then re-raises."""
    try:
        yield
    except Exception as exc:
        store.fail_run(run_id, redact(f"{type(exc).__name__}: {exc}"))
        raise
