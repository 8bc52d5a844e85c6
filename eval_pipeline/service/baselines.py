"""Baselines a team manages (``eval-pipeline runs``, ``eval-pipeline baseline``): a suite's
runs with what each says and whether it is the baseline, the baseline a run would be
gated against and why, a pinned baseline, retired runs. Every change is kept in the
results store as history (core/store/stored_changes.py); nothing is deleted. The choice
itself is core/evaluation/baseline.py's ``baseline_for``, the one every run makes."""

from __future__ import annotations

import getpass
from dataclasses import dataclass

from eval_pipeline.core.errors import ConfigurationError, did_you_mean
from eval_pipeline.core.evaluation.baseline import Chosen, NoBaseline, baseline_for
from eval_pipeline.core.store.database import masked
from eval_pipeline.core.store.records import RunRecord, RunStatus, VerdictRecord, utcnow
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.store.stored_changes import Action, BaselineChange
from eval_pipeline.core.suites.cases import dataset_version
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.service.environment import Environment


class BaselineInputError(ConfigurationError):
    """A suite, a run or a label the command cannot act on (exit 2); the message names the
    value and what there is."""


@dataclass(frozen=True)
class RunRow:
    """One run of a suite as ``eval-pipeline runs list`` shows it."""

    run: RunRecord
    labels: tuple[str, ...]  # the labels on its prompt version now
    verdict: VerdictRecord | None
    items: int | None  # from its summary (None: it has none)
    failed: int | None
    baseline: str  # "baseline", "pinned baseline", "retired", "not a baseline" or ""
    why: str  # why it is retired or not a baseline


@dataclass(frozen=True)
class Shown:
    """A suite's baseline for a label as the next run of another version would get it,
    and whether it is comparable with the suite's cases now."""

    suite: str
    label: str
    chosen: Chosen | NoBaseline
    dataset_now: str | None  # the dataset version of the suite's cases now (None: unread)
    cases_problem: str  # why the cases could not be read, else ""


def who() -> str:
    """Who makes a change (the login name; "unknown" where there is none, a container)."""
    try:
        return getpass.getuser()
    except Exception:  # no login name in the environment nor the password database
        return "unknown"


def _suite_of(env: Environment, name: str) -> Suite:
    return env.services.suite(env.project.suite(name))


def _label(env: Environment, name: str, label: str | None) -> str:
    return label or _suite_of(env, name).thresholds.regression.baseline_label


def check_suite(env: Environment, store: ResultsStore, name: str) -> None:
    """``name`` is a suite of the project, or one the results store has runs of."""
    stored = sorted({suite for suite, _ in store.evaluated()})
    if name in env.project.suite_names or name in stored:
        return
    known = sorted({*env.project.suite_names, *stored})
    raise BaselineInputError(
        f"--suite {name!r}: no such suite: {env.project.path} declares "
        f"{', '.join(env.project.suite_names) or 'none'}, and the results store at "
        f"{masked(store.url)} has runs of {', '.join(stored) or 'none'}"
        f"{did_you_mean(name, known)}"
    )


def get_run(store: ResultsStore, run_id: str) -> RunRecord:
    """The stored run ``run_id``, or exit 2 naming it and the latest runs there are."""
    run = store.get_run(run_id)
    if run is not None:
        return run
    latest = [r.run_id for r in store.list_runs(limit=200)]
    shown = ", ".join(latest[:5]) + (" …" if len(latest) > 5 else "")
    raise BaselineInputError(
        f"run {run_id!r} is not in the results store at {masked(store.url)} (its latest "
        f"runs: {shown or 'none'}{did_you_mean(run_id, latest)}; `eval-pipeline runs list "
        "--suite NAME` lists a suite's)"
    )


def list_runs(env: Environment, name: str, limit: int) -> list[RunRow]:
    """The suite's latest ``limit`` runs, newest first, retired ones included (marked)."""
    store = env.store()
    check_suite(env, store, name)
    runs = store.list_runs(suite=name, limit=limit)
    retired = store.retired(name)
    current: Chosen | NoBaseline | None = None
    by_version: dict[str, tuple[str, ...]] = {}
    if name in env.project.suite_names:
        suite = _suite_of(env, name)
        registry = env.services.registry()
        current = baseline_for(store, suite, None, suite.thresholds.regression.baseline_label,
                               registry)  # fmt: skip
        for prompt, _, labels in registry.list_prompts():
            if prompt == suite.prompt_name:
                for label, version in labels.items():
                    by_version[f"v{version}"] = (*by_version.get(f"v{version}", ()), label)
    baseline = current.run.run_id if isinstance(current, Chosen) else None
    rows = []
    for run in runs:
        summary = store.read_summary(run.run_id)
        mark, why = "", ""
        if run.run_id == baseline:
            assert isinstance(current, Chosen)
            mark = "pinned baseline" if current.pin else "baseline"
        elif run.run_id in retired:
            mark, why = "retired", retired[run.run_id].line()
        elif run.not_baseline:
            mark, why = "not a baseline", run.not_baseline
        rows.append(RunRow(run, tuple(sorted(by_version.get(run.prompt_version, ()))),
                           store.read_verdict(run.run_id),
                           summary.n_items if summary else None,
                           summary.n_errors if summary else None, mark, why))  # fmt: skip
    return rows


def show(env: Environment, name: str, label: str | None) -> Shown:
    """The baseline the next run of ``name`` (of a version other than the label's) is
    gated against, why, and the runs passed over; with the suite's cases' dataset now."""
    store = env.store()
    check_suite(env, store, name)
    suite = _suite_of(env, name)
    label = label or suite.thresholds.regression.baseline_label
    chosen = baseline_for(store, suite, None, label, env.services.registry())
    try:
        now, problem = dataset_version(suite.load_cases()), ""
    except ConfigurationError as exc:  # the cases do not load: say so, show the rest
        now, problem = None, str(exc)
    return Shown(name, label, chosen, now, problem)


def _change(store: ResultsStore, run: RunRecord, action: Action, why: str,
            label: str | None = None) -> BaselineChange:  # fmt: skip
    return _record(store, run.suite, run.run_id, action, why, label)


def _record(store: ResultsStore, suite: str, run_id: str, action: Action, why: str,
            label: str | None) -> BaselineChange:  # fmt: skip
    change = BaselineChange(suite, run_id, action, who(), why, utcnow(), label)
    store.record_change(change)
    return change


def retire(env: Environment, run_id: str, why: str) -> BaselineChange:
    """Never choose run ``run_id`` as a baseline again (until it is restored)."""
    store = env.store()
    run = get_run(store, run_id)
    if (held := store.retired(run.suite).get(run_id)) is not None:
        raise BaselineInputError(f"run {run_id} is retired already ({held.line()}): "
                                 f"`eval-pipeline runs restore {run_id}` undoes it")  # fmt: skip
    if run.status == RunStatus.RUNNING:
        raise BaselineInputError(f"run {run_id} of {run.suite} is still running: retire it "
                                 "once it has settled")  # fmt: skip
    for label, pin in store.pins(run.suite).items():
        if pin.run_id == run_id:
            raise BaselineInputError(
                f"run {run_id} is {run.suite}'s pinned {label} baseline ({pin.line()}): "
                f"unpin it first (`eval-pipeline baseline unset --suite {run.suite} --label "
                f"{label}`) or pin another run (`eval-pipeline baseline set RUN_ID`)"
            )
    return _change(store, run, "retire", why)


def restore(env: Environment, run_id: str, why: str) -> BaselineChange:
    """Undo a retirement: the run may be chosen as a baseline again."""
    store = env.store()
    run = get_run(store, run_id)
    if run_id not in store.retired(run.suite):
        retired = ", ".join(store.retired(run.suite)) or "none"
        raise BaselineInputError(f"run {run_id} of {run.suite} is not retired (its retired "
                                 f"runs: {retired})")  # fmt: skip
    return _change(store, run, "restore", why)


def pin(env: Environment, run_id: str, label: str | None, why: str) -> BaselineChange:
    """Make run ``run_id`` its suite's baseline for ``label`` (default: the suite's
    ``regression.baseline_label``), whatever runs come after, until it is unpinned."""
    store = env.store()
    run = get_run(store, run_id)
    if run.suite not in env.project.suite_names:
        raise BaselineInputError(f"run {run_id} is a run of {run.suite}, which "
                                 f"{env.project.path} no longer declares (its suites: "
                                 f"{', '.join(env.project.suite_names)})")  # fmt: skip
    label = _label(env, run.suite, label)
    complete = [r.run_id for r in store.list_runs(suite=run.suite, status="complete",
                                                  tier="full", limit=5)]  # fmt: skip
    others = f"(complete full-tier runs of {run.suite}: {', '.join(complete) or 'none'})"
    problem = None
    if run.status != RunStatus.COMPLETE:
        problem = f"is {run.status}: only a complete run can be a baseline"
    elif run.tier != "full":
        problem = f"ran the {run.tier} tier: a baseline needs every case (the full tier)"
    elif (held := store.retired(run.suite).get(run_id)) is not None:
        problem = (f"is retired ({held.line()}): restore it first (`eval-pipeline runs "
                   f"restore {run_id}`)")  # fmt: skip
    elif run.not_baseline:
        problem = f"may never be a baseline ({run.not_baseline})"
    if problem:
        raise BaselineInputError(f"run {run_id} {problem} {others}")
    return _change(store, run, "pin", why, label)


def unpin(env: Environment, name: str, label: str | None, why: str) -> BaselineChange:
    """Undo a pin: ``name``'s baseline for ``label`` is chosen again as every run chooses
    it (the latest complete full-tier run of the label's version)."""
    store = env.store()
    check_suite(env, store, name)
    pins = store.pins(name)
    label = label or (_label(env, name, None) if name in env.project.suite_names else "")
    if label not in pins:
        held = ", ".join(f"{k} → {p.run_id}" for k, p in pins.items()) or "none"
        raise BaselineInputError(f"{name} has no pinned baseline for {label!r} (its pins: "
                                 f"{held}): its baseline is chosen as every run chooses it "
                                 f"(`eval-pipeline baseline show --suite {name}`)")  # fmt: skip
    return _record(store, name, pins[label].run_id, "unpin", why, label)
