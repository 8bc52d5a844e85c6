"""The run a candidate is gated against: chosen when the run is planned, the same way
from every driver, and kept with the run."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from eval_pipeline.core.errors import ConfigurationError, did_you_mean
from eval_pipeline.core.evaluation.plan import RunPlan, prompt_key
from eval_pipeline.core.running.runner import (
    RunnerConfig,
)
from eval_pipeline.core.scoring import gate as gating
from eval_pipeline.core.scoring.apply import score_items
from eval_pipeline.core.scoring.thresholds import RegressionConfig
from eval_pipeline.core.store.baselines import PassedOver, latest_baseline
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord, RunStatus
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.store.stored_changes import BaselineChange
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.suites.placeholders import placeholder_cases
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
    passed_over: tuple[PassedOver, ...] = ()

    @property
    def said(self) -> str:
        """Why, with the first runs passed over (a run's ``gate_note``)."""
        if not self.passed_over:
            return self.why
        listed = "; ".join(f"{p.run.run_id}: {p.why}" for p in self.passed_over[:3])
        more = f" and {len(self.passed_over) - 3} more" if len(self.passed_over) > 3 else ""
        return f"{self.why} (passed over: {listed}{more})"


@dataclass(frozen=True)
class Chosen:
    """The baseline chosen, why it was (pinned, or the latest run of the label's version),
    and the runs passed over on the way."""

    run: RunRecord
    why: str
    passed_over: tuple[PassedOver, ...] = ()
    pin: BaselineChange | None = None


def baseline_for(
    store: ResultsStore, suite: Suite, run: RunRecord | None, label: str, labels: Labels | None,
    *, written: str | None = None,
) -> Chosen | NoBaseline:  # fmt: skip
    """The run to compare ``run`` with (None: the next run of a version other than the
    label's, as ``eval-pipeline baseline show`` asks): the run the team pinned as the
    suite's baseline for ``label``, else the latest complete full-tier run of the version
    ``label`` points to that may be a baseline (``latest_baseline``; for a suite without
    a prompt: of ``run``'s own version, earlier). Else why not. ``written``: where the team
    wrote ``label`` (``written_label``); one no prompt in the registry carries is refused
    (UnknownLabel)."""
    pin = store.pins(suite.name).get(label)
    if pin is not None and (pinned := store.get_run(pin.run_id)) is not None:
        return Chosen(pinned, f"pinned as {suite.name}'s {label} baseline: {pin.line()}",
                      pin=pin)  # fmt: skip
    if suite.prompt_name is None or labels is None:
        if run is None and suite.prompt_name is not None:
            return NoBaseline("no prompt registry to read the label from", "")
        version = run.prompt_version if run is not None else prompt_key(None)  # (v0)
    else:
        carried = labels.label_versions([label])
        number = carried.get(suite.prompt_name, {}).get(label)
        if number is None and not carried and written is not None:
            raise UnknownLabel(unknown_label(label, labels, suite.prompt_name, written))
        if number is None:
            return NoBaseline(f"prompt {suite.prompt_name} has no label {label!r}: no baseline",
                              "label a prompt version first")  # fmt: skip
        version = f"v{number}"
    found = latest_baseline(store, run, suite.name, version)
    if found.run is not None:
        return Chosen(found.run, f"the latest complete full-tier run of {label} ({version}) "
                                 "that may be a baseline", found.passed_over)  # fmt: skip
    fix = f"run `eval-pipeline run --suite {suite.name} --label {label}` first"
    if found.why_none:
        return NoBaseline(f"no baseline on these cases yet: {found.why_none}", fix,
                          found.passed_over)  # fmt: skip
    fit = " that may be a baseline" if found.passed_over else ""
    return NoBaseline(
        f"no baseline yet: no complete full-tier run of {suite.name} {label} ({version}){fit}",
        fix, found.passed_over,
    )  # fmt: skip


def unfit(cases: Sequence[GoldenCase], outputs: Sequence[ItemOutput]) -> str | None:
    """Why a run on ``cases`` that produced ``outputs`` may never be a baseline, decided
    when it settles (kept as ``RunRecord.not_baseline``), or None: it ran on init's
    placeholder cases (they are there to be replaced: a baseline on them makes every run
    on the real cases "not comparable"), or every item failed in the agent (it measured a
    crash, not the agent)."""
    if placeholders := placeholder_cases(cases):
        return (f"not a baseline: its cases {', '.join(placeholders)} are the examples "
                "`eval-pipeline init` wrote: replace them with real cases")  # fmt: skip
    if outputs and all(o.error is not None and o.fault == "agent" for o in outputs):
        first = outputs[0]
        return (f"not a baseline: every item ({len(outputs)}) failed in the agent (first: "
                f"{first.item_id}: {(first.error or '')[:120]})")
    return None


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
    - else the suite's ``regression.baseline_label`` (production): the run the team pinned
      for it (``eval-pipeline baseline set``), else the latest complete full-tier run of
      the version it points to that may be a baseline (of this version itself: its
      previous full run on the same cases; ``latest_baseline``). None yet (or the
      registry is out of reach) leaves the run without a gate, and ``gate_note`` says
      why; one that is not comparable (another dataset, other items) is kept, and the
      gate FAILs "not comparable": it cannot tell.

    A label the team wrote (``--baseline``, or a ``regression.baseline_label`` other than
    production) that no prompt in the registry carries is refused (UnknownLabel): a typo
    would leave every run without a gate. One other prompts carry, and this one not yet,
    is "no baseline yet" for this one."""
    request, run, suite = plan_.request, plan_.run, plan_.suite
    asked = request.baseline_run_id is not None or request.baseline_label is not None
    pin: BaselineChange | None = None
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
        chosen: Chosen | NoBaseline
        try:
            chosen = baseline_for(store, suite, run, label, labels, written=written)
        except UnknownLabel:
            raise
        except Exception as exc:  # the registry is out of reach: no gate, and why
            if asked:
                raise
            chosen = NoBaseline(f"baseline unknown: prompt registry unavailable ({exc})", "")
        if isinstance(chosen, NoBaseline):
            if asked:
                raise BaselineMissing(f"{chosen.said} in the results store: {chosen.fix}")
            run.gate_note = chosen.said
            return plan_
        baseline, pin = chosen.run, chosen.pin
    base_items = {o.item_id for o in store.read_outputs(baseline.run_id)}
    items = {c.id for c in plan_.cases}
    problems = gating.comparability_problems(baseline, run, base_items, items)
    if problems and pin is not None:  # the team chose it: say how to undo that
        problems.append(f"the baseline is pinned ({pin.line()}): pin another run "
                        f"(`eval-pipeline baseline set RUN_ID`) or unpin it "
                        f"(`eval-pipeline baseline unset --suite {run.suite}`)")  # fmt: skip
        run.notes.append(problems[-1])
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
