"""Plan a run: its cases (the tier's, from the suite's), its record and its shards;
nothing is written. And the order in which a sequential run draws further cases."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval_pipeline.core.errors import did_you_mean
from eval_pipeline.core.options import OptionsError, RunOptions
from eval_pipeline.core.prompts.labels import PromptVersion
from eval_pipeline.core.running.memo import CachePolicy, check_policy
from eval_pipeline.core.running.runner import (
    Job,
    RunnerConfig,
    jobs_of,
)
from eval_pipeline.core.running.shards import Shard, auto_count, split
from eval_pipeline.core.scoring.gate import fingerprint
from eval_pipeline.core.scoring.thresholds import ThresholdsError
from eval_pipeline.core.store.records import ItemOutput, RunRecord, RunTier
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import (
    CaseSet,
    DatasetError,
    GoldenCase,
    dataset_version,
    select_tier,
)
from eval_pipeline.core.suites.suite import Suite

FAILURES_TIER: RunTier = "failures"  # the tier of a run on production failures (plan(cases=…))


@dataclass
class RunPlan:
    """Everything decided before the first model call (nothing written yet)."""

    suite: Suite
    prompt: PromptVersion | None
    run: RunRecord
    all_cases: CaseSet  # the suite's (held compactly)
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
    loaded: Sequence[GoldenCase] | None = None,
    failures: Sequence[GoldenCase] | None = None,
) -> RunPlan:
    """Load and select the cases and describe the run (raises DatasetError); writes nothing.
    ``notes`` are kept with the run (e.g. a setting that overrode the prompt's). The
    baseline is decided next, by ``with_baseline``. ``loaded``: the suite's cases as an
    earlier plan of this run loaded them (a shard, a later Dagster step: the cases are read
    once per run). Given ``failures`` (production failures, core/traces/rerun.py), the run
    is on those, not on the suite's dataset: its tier is "failures", which no gate, trend
    or sensor counts as an evaluation of the version."""
    noticed: list[str] = []
    cases = failures
    if cases is not None:
        all_cases = CaseSet.of(cases)
    else:
        all_cases = CaseSet.of(loaded) if loaded is not None else suite.load_cases(noticed)
    if cases is None:
        _check_floored_categories(suite, all_cases)
    selected = list(cases) if cases is not None else select_tier(all_cases, request.tier)
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
        agent_versioned=suite.memoize,
        evaluator_versions=suite.versions_of_evaluators(),
        dagster_run_id=dagster_run_id,
        notes=[*notes, *_source_note(suite, cases is None), *_fields_note(noticed)],
        options=request,
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


def _check_floored_categories(suite: Suite, cases: CaseSet) -> None:
    """Each category a floor names is the category of a case of the suite (the whole
    dataset, whatever the tier): a floor on one no case has floors nothing, and its check
    looked passed (a misspelt category where the suite declares none, or a declared one
    with no case yet)."""
    there = sorted(set(cases.categories))
    problems = []
    for metric, floors in suite.thresholds.category_floors.items():
        for category in floors:
            if category in there:
                continue
            hint = did_you_mean(category, there)
            problems.append(
                f"{suite.thresholds_origin or 'the thresholds'}: field 'category_floors."
                f"{metric}': {category!r} is not the category of any case of the suite (its "
                f"cases' categories: {', '.join(there)}), so its floor floors nothing: "
                f"correct it{hint}, or remove it until the suite has such cases"
            )
    if problems:
        raise ThresholdsError("; ".join(problems))


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


def draw_order(cases: Sequence[GoldenCase], run: RunRecord) -> CaseSet:
    """The suite's cases in the order a sequential run draws them: a random order seeded
    by the dataset's version and by what makes the candidate the agent it is (its code,
    prompt and model: ``gate.fingerprint``). A re-run of the same candidate draws the same
    cases (the memo answers it), a change to the dataset draws anew, and every other
    candidate meets a draw of its own: seeded by the dataset alone, every candidate's gate
    looked at the same first cases, and a prompt fixed on the first 20 / 40 / 60 of them,
    worse by the margin over a 200-case suite, passed in 21 / 100 / 100% of runs (now
    about 4%: benchmarks/gate_validity.py). Sorted by id alone: no case is made to draw."""
    seed = json.dumps([run.dataset_version, *fingerprint(run)])
    return CaseSet.of(cases).ordered_by(
        lambda case_id: hashlib.sha256(f"{seed}:{case_id}".encode()).digest())


def drawn_prefix(
    run: RunRecord,
    suite_cases: Sequence[GoldenCase],
    outputs: Sequence[ItemOutput],
    paired: set[str],
) -> list[str]:
    """The sequential gate's pairs: the suite's cases in ``draw_order`` (those the baseline
    has), up to the first the run has no output for. A tier the run started with counts
    only where the draw reaches it, so a tier a team tuned its prompt on cannot carry the
    decision (with the tier first, a suite worse by the margin passed in 10–64% of runs)."""
    ran = {o.item_id for o in outputs}
    prefix = []
    for case_id in draw_order(suite_cases, run).ids:
        if case_id not in paired:
            continue
        if case_id not in ran:
            break
        prefix.append(case_id)
    return prefix


def cases_of_run(store: ResultsStore, run_id: str, cases: Sequence[GoldenCase]) -> list[GoldenCase]:
    """The cases a run has gone through so far, from the suite's ``cases`` (refused if they
    are not the dataset the run was started on), in the order its gate saw them: the
    tier's (less any a budget left unstarted), then those a sequential gate went on to, in
    ``draw_order``."""
    run = store.get_run(run_id)
    if run is None:
        raise DatasetError([f"run {run_id!r} is not in the results store"])
    cases = CaseSet.of(cases)
    if dataset_version(cases) != run.dataset_version:
        raise DatasetError([
            f"the dataset of {run.suite} changed since run {run_id} started (version "
            f"{run.dataset_version} → {dataset_version(cases)}); start a new run"
        ])  # fmt: skip
    if run.tier == FAILURES_TIER:
        return cases_run(store, run_id, cases)
    tier = select_tier(cases, run.tier)
    ran, first = {o.item_id for o in store.read_outputs(run_id)}, {c.id for c in tier}
    beyond = cases.with_ids(lambda case_id: case_id in ran and case_id not in first)
    return cases_run(store, run_id, tier) + list(draw_order(beyond, run))


def cases_run(store: ResultsStore, run_id: str, cases: Sequence[GoldenCase]) -> list[GoldenCase]:
    """The cases of ``cases`` the run has outputs for: all of them, unless its budget
    stopped it before some were started (those are left out of its scores and verdict)."""
    run = store.get_run(run_id)
    if run is None or not run.stopped:
        return list(cases)
    ran = {o.item_id for o in store.read_outputs(run_id)}
    return [c for c in cases if c.id in ran]
