"""``eval_pipeline.evaluate(...)``: evaluate a suite from Python (a user's pytest, a script).

The CLI's ``run`` is this function plus printing; both go through core/evaluation.py.

```python
from eval_pipeline import evaluate

def test_support_agent_did_not_get_worse():
    result = evaluate("support", tier="smoke", baseline_label="production")
    assert result.verdict == "PASS", result.errors or result.failed
```
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from eval_pipeline import settings
from eval_pipeline.agents.project import AgentBuildError, Project, ProjectError, load_project
from eval_pipeline.core import evaluation
from eval_pipeline.core.cases import DatasetError
from eval_pipeline.core.evaluation import BaselineMissing, EvalResult, RunPlan
from eval_pipeline.core.options import OptionsError, RunOptions, run_options
from eval_pipeline.core.prompts import PromptError, PromptVersion
from eval_pipeline.core.redact import redact
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import Progress
from eval_pipeline.core.running.shards import Shard
from eval_pipeline.core.scoring.gate import NotComparable
from eval_pipeline.core.scoring.thresholds import ThresholdsError
from eval_pipeline.core.store.results_store import ResultsStore, ResultsStoreError
from eval_pipeline.integrations.prompt_registry import RegistryUnavailable
from eval_pipeline.integrations.services import Services
from eval_pipeline.llm.endpoint import ModelUnavailable, model_source, require_model
from eval_pipeline.llm.recording import (
    RecordingsError,
    RecordingSession,
    load_entries,
    recorded_model,
)
from eval_pipeline.llm.settings import LLMSettings, replaying

Recording = Literal["off", "record", "replay"]
SETUP_ERRORS = (
    ProjectError, DatasetError, PromptError, RegistryUnavailable, ThresholdsError,
    ResultsStoreError, ModelUnavailable, NotComparable, BaselineMissing, ValueError,
)  # fmt: skip


class SetupError(ValueError):
    """The evaluation cannot start (project, dataset, prompt, model, baseline, store);
    nothing was run or written. The CLI exits 2."""


class RunFailed(RuntimeError):
    """A stage failed after the run was recorded (recorded on the run as 'failed')."""


@dataclass
class Prepared:
    """A planned run with its agent, built before anything is written."""

    project: Project
    services: Services
    store: ResultsStore
    plan: RunPlan
    agent: Agent
    llm: LLMSettings
    recording: RecordingPlan | None = None


@dataclass(frozen=True)
class RecordingPlan:
    """How a run records or replays its outbound calls (llm/recording.py); it pickles, so
    a shard's worker process opens the same session."""

    path: Path
    mode: Literal["record", "replay"]
    ours: tuple[str, ...]  # host:port of our own traffic (Langfuse, an HTTP agent)
    rerecord: str  # the command that records them again

    def session(self) -> RecordingSession:
        return RecordingSession(self.path, self.mode, ours=self.ours, rerecord=self.rerecord)


def prepare(
    suite: str,
    *,
    project: str | Path | None = None,
    prompt_version: int | None = None,
    label: str = "production",
    request: RunOptions | None = None,
    recording: Recording = "off",
) -> Prepared:
    """Everything up to the first model call: any problem raises SetupError."""
    request = request or RunOptions()
    if recording == "record" and request.shards != 1:
        raise SetupError("--record writes one recordings file from one process: record "
                         "without --workers, then replay with them")  # fmt: skip
    if recording == "record":  # every request must go out to be recorded
        request = request.model_copy(update={"cache": "refresh"})
    elif recording == "replay":  # every answer must come from the recordings
        request = request.model_copy(update={"cache": "off"})
    try:
        with replaying(recording == "replay"):  # judges built with the suite replay too
            loaded = load_project(project)
            chosen = loaded.suite(suite)
        services = Services.from_env(loaded.prompts_dir)
        chosen = services.suite(chosen)
        prompt = services.prompt(chosen, version=prompt_version, label=label)
        recordings = loaded.recordings_path(chosen.name, evaluation.prompt_key(prompt))
        llm = run_settings(recording, recordings).for_run(prompt, request.timeout_s)
        which = f" --prompt-version {prompt.version}" if prompt else ""
        rerecord = f"re-record with `eval-pipeline run --suite {suite}{which} --record`"
        if recording == "replay" and not recordings.exists():
            raise SetupError(f"--replay: no recordings at {recordings}; record them with "
                             f"`eval-pipeline run --suite {suite}{which} --record`")  # fmt: skip
        if recording == "replay":
            load_entries(recordings)  # a malformed file is refused before anything runs
        if recording != "replay":
            require_model(llm, model_source(prompt))
        plan = evaluation.plan(chosen, prompt, llm.public_params(), request, notes=llm.notes)
        # a factory that fails: nothing written yet
        agent = services.agent(chosen, prompt, llm, run=plan.run)
        store = ResultsStore(settings.results_url())
        try:
            evaluation.with_baseline(store, plan, services.registry())
        except BaselineMissing:
            if recording != "replay" or request.baseline_label is None:
                raise
            plan.run.notes.append(_replay_baseline(loaded.path, suite, request))
            evaluation.with_baseline(store, plan, services.registry())
    except SetupError:
        raise
    except (*SETUP_ERRORS, AgentBuildError, RecordingsError) as exc:
        raise SetupError(redact(str(exc))) from exc
    planned = None
    if recording != "off":
        service = getattr(agent, "service_url", None)  # an HTTP agent's: the thing under test
        ours = (*services.own_hosts(), *([service] if service else []))
        planned = RecordingPlan(recordings, recording, ours, rerecord)
    return Prepared(loaded, services, store, plan, agent, llm, planned)


def _replay_baseline(project: Path, suite: str, request: RunOptions) -> str:
    """CI, a fresh results store: the baseline label's version replayed from its own
    recordings (a full run), so one command replays both sides of the gate."""
    label = request.baseline_label or "production"
    try:
        baseline = evaluate(suite, project=project, label=label, tier="full",
                            concurrency=request.concurrency, timeout_s=request.timeout_s,
                            recording="replay")  # fmt: skip
    except SetupError as exc:
        raise SetupError(f"no baseline run of {suite} {label} in the results store, and "
                         f"replaying it failed: {exc}") from exc  # fmt: skip
    if baseline.errors:
        raise SetupError(f"no baseline run of {suite} {label} in the results store, and "
                         f"replaying it failed: {baseline.errors[0]}")  # fmt: skip
    return (
        f"baseline: {label} ({baseline.run.prompt_version}) replayed from its recordings "
        f"first (run {baseline.run.run_id})"
    )


@dataclass(frozen=True)
class ProjectShardWorker:
    """Runs one shard of a CLI/API run in a worker process (``--workers``): loads the
    project there, plans the same run again and builds the agent as ``prepare`` did."""

    project: Path
    suite: str
    prompt: PromptVersion | None
    llm: LLMSettings
    request: RunOptions
    run_id: str
    store_url: str
    recording: RecordingPlan | None = None

    def __call__(self, shard: Shard, updates: evaluation.ShardUpdates) -> None:
        loaded = load_project(self.project)
        services = Services.from_env(loaded.prompts_dir)
        chosen = services.suite(loaded.suite(self.suite))
        plan = evaluation.plan(chosen, self.prompt, self.llm.public_params(), self.request,
                               run_id=self.run_id, notes=self.llm.notes)  # fmt: skip
        agent = services.agent(chosen, self.prompt, self.llm, run=plan.run)
        with ResultsStore(self.store_url) as store, _session(self.recording):
            evaluation.produce(store, plan, agent, shard=shard,
                               prices=PriceTable.from_file(settings.prices_file()),
                               progress=evaluation.shard_progress(shard, updates))  # fmt: skip
        services.flush()


def shard_worker(prepared: Prepared) -> ProjectShardWorker:
    plan = prepared.plan
    return ProjectShardWorker(prepared.project.path, plan.suite.name, plan.prompt, prepared.llm,
                              plan.request, plan.run.run_id, prepared.store.url,
                              prepared.recording)  # fmt: skip


def _session(recording: RecordingPlan | None) -> AbstractContextManager[Any]:
    """The run's recording session, or nothing to open."""
    return recording.session() if recording is not None else nullcontext()


def run_prepared(prepared: Prepared, *, progress: Progress | None = None) -> EvalResult:
    """Run every stage, then write the scores back to Langfuse when it is configured (never
    fails the run: undelivered scores wait in the outbox)."""
    store, plan = prepared.store, prepared.plan
    session = _session(prepared.recording)
    try:
        with session:
            result = evaluation.evaluate(store, plan, prepared.agent,
                                         prices=PriceTable.from_file(settings.prices_file()),
                                         progress=progress,
                                         shard_worker=shard_worker(prepared))  # fmt: skip
    except Exception as exc:  # recorded on the run by the stage that failed
        message = redact(f"{type(exc).__name__}: {exc}")
        raise RunFailed(f"run {plan.run.run_id} failed: {message}") from exc
    if isinstance(session, RecordingSession):  # a recording that missed calls is refused
        result.problems += session.shortfall([o for o in result.outputs if not o.source_run_id])
    if problem := _register_partition(plan.run.prompt_version):
        result.warnings.append(problem)
    prepared.services.flush()
    # (result.cases: a sequential run may have gone on past the plan's cases)
    report = prepared.services.write_run(store, result.run, list(result.cases), result.scores,
                                         result.outputs, result.summary.metrics,
                                         plan.suite)  # fmt: skip
    if report is not None and (report.queued or report.set_aside):
        result.warnings.append(f"Langfuse write-back incomplete: {report.line()}")
    if report is not None and report.experiment and report.experiment.problem:
        result.warnings.append(f"Langfuse experiment {report.experiment.line()}")
    return result


def _register_partition(version: str) -> str | None:
    """With a Dagster instance configured ($DAGSTER_HOME), the evaluated version becomes a
    partition there (Dagster is imported only then: it costs a second)."""
    home = os.environ.get("DAGSTER_HOME")
    if not home or not Path(home).is_dir():
        return None
    from eval_pipeline.defs.partitions import register_version

    return register_version(version, home)


def evaluate(
    suite: str,
    *,
    project: str | Path | None = None,
    prompt_version: int | None = None,
    label: str = "production",
    recording: Recording = "off",
    **options: Any,
) -> EvalResult:
    """Evaluate ``suite`` of the project file (found from the working directory unless
    ``project`` names it) and gate it. ``options`` are the fields of RunOptions
    (core/options.py), the CLI's flags under their own names: ``tier``, ``repeats``,
    ``concurrency``, ``timeout_s``, ``cache``, ``baseline_label`` (gate against the latest
    full run of the version this label points to), ``baseline_run_id``, ``margin``,
    ``min_primary``, ``shards`` (processes sharing ``concurrency``), ….
    ``result.verdict`` is PASS, FAIL, UNDECIDED or ERROR (``result.exit_code`` the CLI's
    0, 1, 3 — 0 under ``on_undecided="warn"`` — or 2), ``result.failed`` names what failed,
    ``result.undecided`` what the gate could not decide, ``result.errors`` why there is no
    verdict."""
    try:
        request = run_options(**options)
    except OptionsError as exc:
        raise SetupError(f"evaluate(): {exc}") from None
    prepared = prepare(suite, project=project, prompt_version=prompt_version, label=label,
                       request=request, recording=recording)  # fmt: skip
    return run_prepared(prepared)


def run_settings(recording: Recording, recordings: Path) -> LLMSettings:
    """The model settings of a CLI or API run: the environment and the recording mode (a
    replay takes the recordings' model unless EVAL_LLM_MODEL names one)."""
    llm = LLMSettings.from_env()
    if recording != "off":
        llm = llm.model_copy(update={"recording": recording, "recordings_path": recordings})
        if recording == "replay" and not os.environ.get("EVAL_LLM_MODEL") and recordings.exists():
            llm = llm.model_copy(update={"model": recorded_model(recordings) or llm.model})
    return llm
