"""The run service: what every driver does to evaluate a suite, written once.

A driver (the CLI and ``evaluate()`` in one process, with worker processes for shards;
Dagster with a step per shard) only chooses how items are produced and how results are
shown. Everything else is here:

    abandon_ended ─► prepare ─► choose_baseline ─► start ─► produce (per shard)
                  ─► check_produced ─► score ─► conclude ─► finish

- ``abandon_ended``: running runs whose driver ended first marked abandoned (decided here
  only; the Dagster driver says which of its runs ended).

- ``prepare``: the project's suite, the prompt version, the model settings, the plan and
  (built when first used) the agent; any problem raises an ``EvalError`` before anything
  is written. ``prepare`` again with the pinned request and the run's cases (``replan``)
  gives the same run in another process or step, without reading the cases again.
- ``choose_baseline``, ``start``: the baseline, chosen before any model call; the run
  recorded.
- ``produce``, ``score``: the stages of core/evaluation, under the run's recording session.
- ``check_produced``: one output per item once every shard has run.
- ``conclude``, ``finish``: the summary, the verdict and the sequential continuation
  (core/evaluation ``conclude``); the run's status settled and the scores written back to
  Langfuse. ``run_in_process`` is this sequence in one process (the CLI, ``evaluate()``,
  Dagster's ``failure_rerun``); Dagster's ``eval_job`` runs it as steps (defs/evaluation).

A run on production failures (``RunRequest.failures``) is the same sequence: no baseline,
the rerun's scores (core/traces/rerun.py), a summary and no verdict, its lineage written
back. Every check of the registry (core/scoring/checks) runs in ``conclude``, in both
drivers.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from eval_pipeline.core import evaluation
from eval_pipeline.core.errors import ConfigurationError, RunFailed
from eval_pipeline.core.evaluation import FAILURES_TIER, BaselineMissing, EvalResult, RunPlan
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.prompts.labels import PromptVersion
from eval_pipeline.core.running import process
from eval_pipeline.core.running.agent import Agent, offered_tools, service_url
from eval_pipeline.core.running.ids import Generated
from eval_pipeline.core.running.runner import Progress
from eval_pipeline.core.running.shards import Shard
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord, RunStatus
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import CaseSet, GoldenCase, unknown_expected_tools
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.core.traces import rerun
from eval_pipeline.integrations import langfuse_scores
from eval_pipeline.integrations.langfuse_experiments import RunVerdict
from eval_pipeline.integrations.langfuse_scores import WritebackReport
from eval_pipeline.llm.agent_endpoint import agent_environment
from eval_pipeline.llm.endpoint import model_source, require_model
from eval_pipeline.llm.model_settings import LLMSettings, replaying
from eval_pipeline.llm.recording import (
    Belongs,
    Entry,
    RecordingSession,
    load_entries,
    recorded_model,
)
from eval_pipeline.service.environment import Environment

Recording = Literal["off", "record", "replay"]


@dataclass(frozen=True)
class RunRequest:
    """What to run (it pickles: it crosses into worker processes and Dagster steps).
    ``prompt_version`` None: the version ``label`` points to; once prepared, the request
    is pinned (``Prepared.ref``) to the version and the run id chosen. ``failures``: a run
    on production failures (core/traces/rerun.py) instead of the suite's cases: the same
    sequence, its score and conclude steps those of a rerun, never gated."""

    suite: str
    options: RunOptions = field(default_factory=RunOptions)
    prompt_version: int | None = None
    label: str = "production"
    recording: Recording = "off"
    run_id: str | None = None
    dagster_run_id: str | None = None
    failures: tuple[GoldenCase, ...] = ()


@dataclass(frozen=True)
class RunRef:
    """A run as its later steps get it (a worker process, Dagster's shards, item_scores,
    eval_summary): its pinned request and the suite's cases its first plan loaded, so the
    cases are read once per run. It pickles."""

    request: RunRequest
    cases: CaseSet

    @property
    def run_id(self) -> str:
        assert self.request.run_id is not None, "a run reference names its run"
        return self.request.run_id


@dataclass(frozen=True)
class RecordingPlan:
    """How a run records or replays its outbound calls (llm/recording.py)."""

    path: Path
    mode: Literal["record", "replay"]
    belongs: Belongs  # the suite and prompt version it records
    ours: tuple[str, ...]  # host:port of our own traffic (Langfuse, an HTTP agent)
    rerecord: str  # the command that records them again
    generated: Generated  # the project's own generated values (``replay:``)

    def session(self) -> RecordingSession:
        return RecordingSession(self.path, self.mode, self.belongs, ours=self.ours,
                                rerecord=self.rerecord, generated=self.generated)  # fmt: skip


@dataclass
class Prepared:
    """A planned run, before or while it runs: its environment, its pinned request, its
    plan and the model settings its calls use; the agent is built when first asked for."""

    env: Environment
    request: RunRequest
    suite: Suite
    prompt: PromptVersion | None
    llm: LLMSettings
    plan: RunPlan
    recording: RecordingPlan | None = None
    _agent: Agent | None = None

    @property
    def store(self) -> ResultsStore:
        return self.env.store()

    @property
    def run_id(self) -> str:
        return self.plan.run.run_id

    @property
    def on_failures(self) -> bool:
        """A run on production failures (``RunRequest.failures``)."""
        return bool(self.request.failures)

    def ref(self) -> RunRef:
        """This run for ``replan``: its prompt version, run id and options pinned (a label
        that moves meanwhile changes nothing) and the cases it loaded."""
        version = self.prompt.version if self.prompt is not None else None
        pinned = dataclasses.replace(self.request, options=self.plan.request,
                                     prompt_version=version, run_id=self.run_id)  # fmt: skip
        return RunRef(pinned, self.plan.all_cases)

    def agent(self) -> Agent:
        """The run's agent (its factory runs here, once), traced when Langfuse is set."""
        if self._agent is None:
            extra = {"dagster_run_id": d} if (d := self.request.dagster_run_id) else None
            self._agent = self.env.services.agent(self.suite, self.prompt, self.llm,
                                                  run=self.plan.run, metadata=extra,
                                                  cases=self.suite_cases())  # fmt: skip
        return self._agent

    def suite_cases(self) -> CaseSet:
        """The suite's cases, which its Langfuse dataset mirrors: as this run loaded them,
        or, for a run on production failures (whose experiment is still the suite's
        dataset), read from the suite."""
        if self.plan.run.tier == FAILURES_TIER:
            return self.suite.load_cases()
        return self.plan.all_cases

    def session(self) -> AbstractContextManager[Any]:
        """The run's recording session, or nothing to open."""
        return self.recording.session() if self.recording is not None else nullcontext()


def prepare(env: Environment, request: RunRequest,
            cases: Sequence[GoldenCase] | None = None) -> Prepared:  # fmt: skip
    """Everything up to the first model call; any problem raises an ``EvalError`` and
    nothing is written. ``cases``: the suite's cases as an earlier ``prepare`` of this run
    loaded them (``replan``); then the request must be pinned, and the model endpoint was
    checked already. The agent is built with its own clients' settings
    (``agent_settings``), as it runs."""
    with agent_settings(env, request.recording):
        return _prepare(env, request, cases)


def agent_settings(env: Environment, recording: Recording) -> AbstractContextManager[Any]:
    """While the agent is built and runs: its own model clients' settings
    (llm/agent_endpoint.py: OPENAI_* from EVAL_LLM_*, langgraph.json's env, a replay's
    placeholder keys), each where the environment sets none."""
    declared = env.project.langgraph.env if env.project.langgraph else {}
    return agent_environment(env.llm, declared, replay=recording == "replay")


def _prepare(env: Environment, request: RunRequest,
             cases: Sequence[GoldenCase] | None) -> Prepared:  # fmt: skip
    options, mode = request.options, request.recording
    if mode == "record" and options.shards != 1:
        raise ConfigurationError("--record writes one recordings file from one process: "
                                 "record without --workers, then replay with them")  # fmt: skip
    if mode == "record":  # every request must go out to be recorded
        options = options.model_copy(update={"cache": "refresh"})
    elif mode == "replay":  # every answer must come from the recordings
        options = options.model_copy(update={"cache": "off"})
    _ = env.prices  # read once, here: a prices file that cannot be used is refused first
    services = env.services
    with replaying(mode == "replay"):  # the suite's LLM judges replay too, never offline
        suite = services.suite(env.project.suite(request.suite))
    prompt = services.prompt(suite, version=request.prompt_version, label=request.label)
    belongs = Belongs(suite.name, evaluation.prompt_key(prompt))
    recordings = env.project.recordings_path(belongs.suite, belongs.version)
    recording, entries = None, None
    if mode != "off":
        which = f" --prompt-version {prompt.version}" if prompt else ""
        command = f"eval-pipeline run --suite {suite.name}{which} --record"
        if mode == "replay" and not recordings.exists():
            raise ConfigurationError(f"--replay: no recordings at {recordings}; record them "
                                     f"with `{command}`")  # fmt: skip
        rerecord = f"re-record with `{command}`"
        generated = Generated(tuple(env.project.config.replay.generated_patterns))
        if mode == "replay":  # a file that is not this run's is refused before anything runs
            entries = load_entries(recordings, belongs, rerecord, generated)
        recording = RecordingPlan(recordings, mode, belongs, services.own_hosts(), rerecord,
                                  generated)  # fmt: skip
    llm = _model_settings(env.llm, mode, recordings, entries).for_run(prompt, options.timeout_s)
    if cases is None and mode != "replay":
        require_model(llm, model_source(prompt))
    plan = evaluation.plan(suite, prompt, llm.public_params(), options, run_id=request.run_id,
                           dagster_run_id=request.dagster_run_id, notes=llm.notes,
                           loaded=cases, failures=request.failures or None)  # fmt: skip
    prepared = Prepared(env, request, suite, prompt, llm, plan, recording)
    if cases is None:  # a factory that fails fails here, before anything is written
        agent = prepared.agent()
        plan.run.notes += unknown_expected_tools(plan.all_cases, offered_tools(agent))
        service = service_url(agent)
        if recording is not None and service:  # an HTTP agent's service: the thing under test
            prepared.recording = dataclasses.replace(recording, ours=(*recording.ours, service))
    return prepared


def replan(env: Environment, ref: RunRef) -> Prepared:
    """The run ``ref`` planned again in another process or step, on the cases its first
    plan loaded."""
    return prepare(env, ref.request, ref.cases)


def _model_settings(llm: LLMSettings, mode: Recording, recordings: Path,
                    entries: dict[str, Entry] | None) -> LLMSettings:  # fmt: skip
    """The model settings of a run in recording ``mode`` (a replay takes the model its
    recorded ``entries`` name unless EVAL_LLM_MODEL names one)."""
    if mode == "off":
        return llm
    llm = llm.model_copy(update={"recording": mode, "recordings_path": recordings})
    if entries is not None and not os.environ.get("EVAL_LLM_MODEL"):
        llm = llm.model_copy(update={"model": recorded_model(entries) or llm.model})
    return llm


def choose_baseline(prepared: Prepared) -> None:
    """The run's baseline, chosen before any model call (core/evaluation/baseline.py). A
    replay in a fresh results store (CI) with ``--baseline LABEL`` first replays that
    label's version from its own recordings, so one command replays both sides."""
    if prepared.on_failures:  # (no gate judges a run on production failures)
        return
    store, plan = prepared.store, prepared.plan
    labels = prepared.env.services.registry()
    try:
        evaluation.with_baseline(store, plan, labels)
    except BaselineMissing:
        options = plan.request
        if prepared.request.recording != "replay" or options.baseline_label is None:
            raise
        plan.run.notes.append(_replay_baseline(prepared))
        evaluation.with_baseline(store, plan, labels)


def _replay_baseline(prepared: Prepared) -> str:
    options = prepared.plan.request
    label = options.baseline_label or "production"
    request = RunRequest(prepared.suite.name, RunOptions(
        tier="full", concurrency=options.concurrency, timeout_s=options.timeout_s,
    ), label=label, recording="replay")  # fmt: skip
    what = f"no baseline run of {prepared.suite.name} {label} in the results store, and " \
           "replaying it failed"  # fmt: skip
    try:
        baseline = run_in_process(prepare(prepared.env, request)).result
    except ConfigurationError as exc:
        raise ConfigurationError(f"{what}: {exc}") from exc
    if baseline.errors:
        raise ConfigurationError(f"{what}: {baseline.errors[0]}")
    return (
        f"baseline: {label} ({baseline.run.prompt_version}) replayed from its recordings "
        f"first (run {baseline.run.run_id})"
    )


def abandon_ended(
    store: ResultsStore,
    dagster_ended: Callable[[str], bool] | None = None,
    *,
    suite: str | None = None,
    prompt_version: str | None = None,
) -> list[str]:
    """The one place a run is found abandoned, before a driver starts another: a running
    run (of ``suite`` / ``prompt_version``) whose driver ended before it did is marked
    ``abandoned``, what it finished kept (its outputs stay in the memo). Its driver is the
    process that owns it (an in-process run, on this host: core/running/process.py) or its
    Dagster run (``dagster_ended``: what Dagster's instance says of a Dagster run id, given
    by the Dagster driver). Their ids."""

    def why_ended(run: RunRecord) -> str | None:
        if run.owner and process.ended(run.owner):
            return f"its process ({run.owner}) ended before the run did; what it finished is kept"
        if dagster_ended and run.dagster_run_id and dagster_ended(run.dagster_run_id):
            return (f"its Dagster run {run.dagster_run_id} ended without finishing it; what "
                    "it finished is kept")  # fmt: skip
        return None

    return store.abandon(why_ended, suite=suite, prompt_version=prompt_version)


def start(prepared: Prepared) -> None:
    """Record the run (status running)."""
    prepared.store.create_run(prepared.plan.run)


def produce(prepared: Prepared, *, shard: Shard | None = None,
            progress: Progress | None = None) -> list[ItemOutput]:  # fmt: skip
    """The agent on the plan's items (or one ``shard``'s); a run that records or replays
    does it inside its recording session (``Prepared.session``), opened by the driver."""
    with agent_settings(prepared.env, prepared.request.recording):
        outputs = evaluation.produce(prepared.store, prepared.plan, prepared.agent(),
                                     shard=shard, prices=prepared.env.prices,
                                     progress=progress)  # fmt: skip
    prepared.env.services.flush()
    return outputs


def check_produced(store: ResultsStore, ref: RunRef) -> list[ItemOutput]:
    """Every item of the run has exactly one output, once every shard has run (else the run
    fails, naming what is missing): what both drivers check between produce and score."""
    run = store.get_run(ref.run_id)
    assert run is not None, f"run {ref.run_id} was recorded by start"
    return evaluation.check_complete(store, run, evaluation.cases_of_run(store, ref.run_id,
                                                                         ref.cases))  # fmt: skip


def scored_cases(prepared: Prepared) -> list[GoldenCase]:
    """The cases the run has gone through so far, in the order its gate sees them."""
    return evaluation.cases_of_run(prepared.store, prepared.run_id, prepared.plan.all_cases)


def score(prepared: Prepared) -> list[ItemScore]:
    """The suite's evaluators on every output (LLM judges under the run's options); on
    production failures, the evaluators each case failed there (core/traces/rerun.py)."""
    if prepared.on_failures:
        return rerun.score_failures(prepared.store, prepared.run_id, scored_cases(prepared),
                                    prepared.suite)  # fmt: skip
    return evaluation.score(prepared.store, prepared.run_id, prepared.suite,
                            scored_cases(prepared), prices=prepared.env.prices)  # fmt: skip


@dataclass
class Finished:
    """A judged run, and what was written back to Langfuse (None without Langfuse)."""

    result: EvalResult
    writeback: WritebackReport | None


def conclude(prepared: Prepared, *, progress: Progress | None = None) -> EvalResult:
    """The summary, the verdict and, for a sequential gate, more cases until it can tell
    (core/evaluation ``conclude``; the agent is built only then). On production failures:
    the summary, and no verdict (core/traces/rerun.py ``conclude_failures``)."""
    if prepared.on_failures:
        return rerun.conclude_failures(prepared.store, prepared.plan, scored_cases(prepared))
    with agent_settings(prepared.env, prepared.request.recording):  # (more cases may run)
        return evaluation.conclude(prepared.store, prepared.plan, scored_cases(prepared),
                                   prepared.agent, prices=prepared.env.prices,
                                   progress=progress)  # fmt: skip


def write_back(prepared: Prepared, result: EvalResult) -> Finished:
    """Every score written back to Langfuse when it is configured; never fails the run
    (undelivered scores wait in the outbox): what went wrong becomes a warning. A run on
    production failures writes its lineage instead: on each original trace, whether this
    version fixes it (``rerun_fixed_<version>``)."""
    services = prepared.env.services
    services.flush()
    if prepared.on_failures:
        fixed = rerun.rerun_report(result.cases, result.outputs, result.scores)
        lineage = rerun.lineage_scores(fixed, result.run.prompt_version)
        report = services.write_back(prepared.store,
                                     langfuse_scores.trace_score_payloads(lineage))  # fmt: skip
    else:
        gate = result.gate
        margin = gate.inputs.margin if gate is not None and gate.inputs is not None else None
        verdict = RunVerdict(result.verdict_record(), margin)
        report = services.write_run(prepared.store, result.run, prepared.suite_cases(),
                                    result.scores, result.outputs, result.summary.metrics,
                                    prepared.suite, verdict=verdict,
                                    evaluations=result.summary.run_evaluations)  # fmt: skip
    if report is not None:
        result.langfuse = report.line()
    if report is not None and (report.queued or report.set_aside):
        result.warnings.append(f"Langfuse write-back incomplete: {report.line()}")
    if report is not None and report.experiment and report.experiment.problem:
        result.warnings.append(f"Langfuse {report.experiment.line()}")
    return Finished(result, report)


def finish(prepared: Prepared, result: EvalResult) -> Finished:
    """What follows ``conclude``: the run's status settled (with its verdict; a run on
    production failures has none, and is complete), then ``write_back``."""
    if prepared.on_failures:
        prepared.store.settle_run(prepared.run_id, RunStatus.COMPLETE)
    else:
        evaluation.settle(prepared.store, result)
    return write_back(prepared, result)


def run_in_process(prepared: Prepared, *, progress: Progress | None = None) -> Finished:
    """The in-process driver (the CLI, ``evaluate()``, and the Dagster asset that runs
    production failures again, in one step): earlier runs whose driver ended marked
    abandoned (``abandon_ended``), then the stages Dagster's steps run, in this process:
    the baseline, ``start``, ``produce`` (the shards of a ``--workers`` run each in a
    worker process of this machine, as Dagster runs a step per shard), ``check_produced``,
    ``score``, ``conclude`` — all in one recording session when the run records or
    replays, a recording that missed calls making the verdict ERROR — then ``finish``."""
    abandoned = abandon_ended(prepared.store)
    prepared.plan.run.owner = process.this_process()  # (a later start can tell it ended)
    session = prepared.session()
    with agent_settings(prepared.env, prepared.request.recording):  # (as prepare built it)
        choose_baseline(prepared)
        with session:
            start(prepared)
            if len(prepared.plan.shards) == 1:
                produce(prepared, progress=progress)
            else:
                worker = ShardWorker(prepared.env.project.path, prepared.ref())
                evaluation.produce_in_processes(prepared.store, prepared.plan, worker,
                                                progress=progress)  # fmt: skip
            check_produced(prepared.store, prepared.ref())
            score(prepared)
            result = conclude(prepared, progress=progress)
        if isinstance(session, RecordingSession):
            result.problems += session.shortfall([o for o in result.outputs
                                                  if not o.source_run_id])  # fmt: skip
            result.problems += session.escaped()
        if abandoned:
            shown = ", ".join(abandoned[:3]) + (" …" if len(abandoned) > 3 else "")
            result.warnings.append(f"{len(abandoned)} earlier run(s) whose process had ended "
                                   f"are marked abandoned, what they finished kept: "
                                   f"{shown}")  # fmt: skip
        return finish(prepared, result)  # (after the shortfall: it makes an ERROR)


@dataclass(frozen=True)
class ShardWorker:
    """One shard of an in-process run in a worker process (``--workers``): the environment
    read there again, the run planned again on the cases it was given, the agent built
    there (it pickles: it crosses into the worker process)."""

    project: Path
    run: RunRef

    def __call__(self, shard: Shard, updates: evaluation.ShardUpdates) -> None:
        env = Environment.from_env(self.project)
        prepared = replan(env, self.run)
        with prepared.session() as session:
            produce(prepared, shard=shard, progress=evaluation.shard_progress(shard, updates))
        if isinstance(session, RecordingSession) and (escaped := session.escaped()):
            raise RunFailed(f"shard {shard.index}: {escaped[0]}")
