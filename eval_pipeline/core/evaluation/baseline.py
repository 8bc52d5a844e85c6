"""The run a candidate is gated against: chosen when the run is planned, the same way
from every driver, and kept with the run."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from eval_pipeline.core.errors import ConfigurationError, did_you_mean
from eval_pipeline.core.evaluation.plan import RunPlan
from eval_pipeline.core.running.runner import (
    RunnerConfig,
)
from eval_pipeline.core.scoring import gate as gating
from eval_pipeline.core.scoring.apply import score_items
from eval_pipeline.core.scoring.thresholds import RegressionConfig
from eval_pipeline.core.store.baselines import find_baseline
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord, RunStatus
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.suites.suite import Suite


class Labels(Protocol):
    """Where label positions come from (a prompt registry: Langfuse or local files)."""

    def label_versions(self, labels: Iterable[str]) -> dict[str, dict[str, int]]: ...

    def list_prompts(self) -> list[tuple[str, list[int], dict[str, int]]]: ...


class BaselineMissing(ConfigurationError):
    """A baseline was asked for and there is none; the message says how to make one."""


class UnknownLabel(ConfigurationError):
    """A baseline label the team wrote that no prompt in the registry carries: a typo
    would leave every run without a baseline, and so without a gate."""


DEFAULT_LABEL = RegressionConfig.model_fields["baseline_label"].default  # production


@dataclass(frozen=True)
class NoBaseline:
    """Why a run has no baseline, and what would give it one."""

    why: str
    fix: str


def baseline_for(
    store: ResultsStore, suite: Suite, run: RunRecord, label: str, labels: Labels | None,
    *, written: str | None = None,
) -> RunRecord | NoBaseline:  # fmt: skip
    """The run to compare ``run`` with: the latest complete full-tier run of the version
    ``label`` points to (for a suite without a prompt: of its own, earlier). Else why not.
    ``written``: where the team wrote ``label`` (``written_label``); one no prompt in the
    registry carries is refused (UnknownLabel)."""
    if suite.prompt_name is None or labels is None:
        version = run.prompt_version
    else:
        carried = labels.label_versions([label])
        number = carried.get(suite.prompt_name, {}).get(label)
        if number is None and not carried and written is not None:
            raise UnknownLabel(unknown_label(label, labels, suite.prompt_name, written))
        if number is None:
            return NoBaseline(f"prompt {suite.prompt_name} has no label {label!r}: no baseline",
                              "label a prompt version first")  # fmt: skip
        version = f"v{number}"
    baseline = find_baseline(store, run, version)
    if baseline is None:
        return NoBaseline(
            f"no baseline yet: no complete full-tier run of {suite.name} {label} ({version})",
            f"run `eval-pipeline run --suite {run.suite} --label {label}` first",
        )
    return baseline


def written_label(suite: Suite, baseline_label: str | None) -> str | None:
    """Where the team wrote the baseline label a run reads, when the team chose it: the
    option (``--baseline``), or the suite's thresholds (``regression.baseline_label``, set
    to another label than the default). None for the default ``production``, which a
    registry may not carry yet: a project's first runs have "no baseline yet"."""
    if baseline_label is not None:
        return "--baseline / baseline_label"  # the CLI's option; evaluate()'s, Dagster's
    regression = suite.thresholds.regression
    chosen = "baseline_label" in regression.model_fields_set
    if not chosen or regression.baseline_label == DEFAULT_LABEL:
        return None
    return f"{suite.thresholds_origin or 'the thresholds'}: field 'regression.baseline_label'"


def unknown_label(label: str, labels: Labels, prompt: str, written: str) -> str:
    """Why ``label`` (written at ``written``) cannot be a baseline label: no prompt
    carries it; the labels there are, the nearest, and what to do."""
    try:
        there = sorted({name for _, _, by_label in labels.list_prompts() for name in by_label})
    except Exception as exc:  # the listing failed where the lookup did not: say so
        there, listed = [], f"the labels there are could not be listed: {exc}"
    else:
        listed = f"labels: {', '.join(there) or 'none yet'}"
    hint = did_you_mean(label, there)
    said = f"{written} {label!r}" if written.startswith("--") else f"{written}: {label!r}"
    return (f"{said}: prompt {prompt} has no label {label!r}, and no prompt in the registry "
            f"carries it ({listed}), so no run would have a baseline, nor a gate: name a "
            f"label there is{hint}, or point this one at a "
            f"version first (`eval-pipeline prompts label {prompt} VERSION {label}`)")  # fmt: skip


def with_baseline(store: ResultsStore, plan_: RunPlan, labels: Labels | None) -> RunPlan:
    """The plan with its baseline, decided before any model call and kept with the run
    (``RunRecord.baseline_run_id``, or ``gate_note``: why it has none), the same way from
    every entry point:

    - asked for (``baseline_run_id``, or ``baseline_label``: ``--baseline``): it must exist
      and be comparable, else BaselineMissing / NotComparable, an error;
    - else the suite's ``regression.baseline_label`` (production): the latest complete
      full-tier run of the version it points to (of this version itself: its previous
      full run). None yet (or the registry is out of reach) leaves the run without a
      gate, and ``gate_note`` says why; one that is not comparable (another dataset,
      other items) is kept, and the gate FAILs "not comparable": it cannot tell.

    A label the team wrote (``--baseline``, or a ``regression.baseline_label`` other than
    production) that no prompt in the registry carries is refused (UnknownLabel): a typo
    would leave every run without a gate. One other prompts carry, and this one not yet,
    is "no baseline yet" for this one."""
    request, run, suite = plan_.request, plan_.run, plan_.suite
    asked = request.baseline_run_id is not None or request.baseline_label is not None
    baseline: RunRecord | NoBaseline
    if request.baseline_run_id is not None:
        found = store.get_run(request.baseline_run_id)
        if found is None or found.status != RunStatus.COMPLETE or found.suite != run.suite:
            said = f"is {found.status} ({found.suite})" if found else "is not there"
            raise BaselineMissing(f"baseline run {request.baseline_run_id} {said} in the "
                                  f"results store: name a complete run of {run.suite}")  # fmt: skip
        baseline = found
    else:
        label = request.baseline_label or suite.thresholds.regression.baseline_label
        written = written_label(suite, request.baseline_label)
        try:
            baseline = baseline_for(store, suite, run, label, labels, written=written)
        except UnknownLabel:
            raise
        except Exception as exc:  # the registry is out of reach: no gate, and why
            if asked:
                raise
            baseline = NoBaseline(f"baseline unknown: prompt registry unavailable ({exc})", "")
        if isinstance(baseline, NoBaseline):
            if asked:
                raise BaselineMissing(f"{baseline.why} in the results store: {baseline.fix}")
            run.gate_note = baseline.why
            return plan_
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


def decided_baseline(store: ResultsStore, run: RunRecord) -> tuple[RunRecord | None, str]:
    """The baseline ``with_baseline`` chose for ``run`` when it was planned, or None and
    why (the verdict stage reads it)."""
    if run.baseline_run_id is not None:
        baseline = store.get_run(run.baseline_run_id)
        if baseline is not None:
            return baseline, ""
        return None, f"baseline run {run.baseline_run_id} is no longer in the results store"
    return None, run.gate_note or "no baseline was decided when this run was planned"


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
