"""Every evaluation run as a Langfuse experiment (Datasets → the dataset → Experiments, and
the comparison of two runs side by side).

How Langfuse groups an experiment, read in its sources (langfuse/langfuse v4.16.0):
``OtelIngestionProcessor.extractExperimentFields``
(packages/shared/src/server/otel/OtelIngestionProcessor.ts) reads the
``langfuse.experiment.*`` span attributes into the events table; an experiment is every
event with that ``experiment_id``, an item the event whose span id is the item's
``root_observation_id``, its cost the sum over the events that share the item and trace
(clickhouse-sql/query-fragments.ts). Nothing there is validated against the dataset. The
Python SDK 5 sets the same attributes in ``Langfuse._process_experiment_item``
(langfuse/_client/client.py) and carries them to child spans with
``_propagate_attributes(experiment=...)`` (langfuse/_client/propagation.py): we do as it
does, so the LangGraph run's generations count in the item's cost. Run-level scores join
the experiment by ``datasetRunId`` = the experiment id (repositories/experiments.ts).

A v3 server in its default (legacy) write mode ignores these attributes: its dataset runs
are rows written by ``POST /api/public/dataset-run-items`` (web/src/pages/api/public/
dataset-run-items.ts, v3.225.4), one per item, the run made on first use by name, the
dataset item required to exist and be active (404 otherwise). ``link_run`` syncs
the suite's dataset and writes those rows; ``reads_experiments`` says which kind the
server is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from eval_pipeline.core.store.records import ItemOutput, RunRecord, VerdictRecord
from eval_pipeline.core.suites.cases import GoldenCase, LangfuseDatasetRef
from eval_pipeline.integrations.langfuse_client import (
    LangfuseSettings,
    describe_status,
    item_trace_id,
    major_version,
)
from eval_pipeline.integrations.langfuse_datasets import dataset_name, linked_items

# langfuse/_client/attributes.py, LangfuseOtelSpanAttributes
EXPECTED_OUTPUT = "langfuse.experiment.item.expected_output"


def run_metadata(run: RunRecord) -> dict[str, str]:
    """What a run's experiment says about it (and every item's trace metadata): which
    suite, prompt version, dataset version, model, agent code and commit it evaluated,
    and how."""
    return {"suite": run.suite, "prompt_version": run.prompt_version, "run_id": run.run_id,
            "dataset_version": run.dataset_version, "model": run.model, "tier": run.tier,
            "agent_version": run.agent_version,
            **({"commit": run.code_commit} if run.code_commit else {})}  # fmt: skip


@dataclass(frozen=True)
class RunVerdict:
    """The gate's conclusion as the run's experiment shows it: the verdict, the metric that
    backs it with its Δ and interval against the baseline, and the margin it was gated at
    (None: no gate)."""

    record: VerdictRecord
    margin: float | None = None

    def metadata(self) -> dict[str, str]:
        """As the verdict score's metadata, and the v3 dataset run's (written after the
        verdict; a v4 experiment's metadata is its spans', fixed before it)."""
        r = self.record
        said = {"verdict": r.verdict.value, "verdict_reason": r.reason}
        if r.metric:
            said |= {"verdict_metric": r.metric, "verdict_delta": r.delta_text,
                     "verdict_interval": r.interval_text}  # fmt: skip
        if self.margin is not None:
            said["verdict_margin"] = f"{self.margin:g}"
        if r.baseline_run_id:
            said["baseline_run_id"] = r.baseline_run_id
        return said

    def comment(self) -> str:
        """One line, as a score's comment: the verdict and why, then the evidence."""
        r = self.record
        evidence = []
        if r.metric:
            shown = r.interval_text if r.interval_text != "–" else ""
            evidence.append(f"{r.metric} Δ {r.delta_text} {shown}".rstrip())
        if self.margin is not None:
            evidence.append(f"margin {self.margin:g}")
        if r.baseline_run_id:
            evidence.append(f"baseline run {r.baseline_run_id}")
        head = r.verdict.value + (f": {r.reason}" if r.reason else "")
        return f"{head} — {'; '.join(evidence)}" if evidence else head


def experiment_id(run_id: str) -> str:
    """The experiment (dataset run) id of one evaluation run: 16 hex characters, like the
    ids the SDK and the server derive, from our run id alone so every process of a run
    (shards, a re-executed Dagster run) names the same experiment."""
    return hashlib.sha256(f"eval-pipeline-experiment:{run_id}".encode()).hexdigest()[:16]


def propagated(run_id: str, item_id: str, root_span_id: str, metadata: Mapping[str, Any],
               dataset_id: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The SDK's PropagatedExperimentAttributes for one item (the experiment named by our
    run id; JSON values serialised as the SDK does). ``dataset_id``: the synced dataset's
    server id, which lists the experiment under the dataset (the SDK sets it from the
    items' ``dataset_id`` in ``run_experiment``)."""
    return {
        "experiment_id": experiment_id(run_id),
        "experiment_name": run_id,
        "experiment_metadata": json.dumps(dict(metadata), default=str),
        "experiment_dataset_id": dataset_id,
        "experiment_item_id": item_id,
        "experiment_item_metadata": None,
        "experiment_item_root_observation_id": root_span_id,
    }


def root_attributes(expected_output: Any) -> dict[str, str]:
    """Set on the item's root span only (the SDK does the same); the description is on
    every span (langfuse_client.item_spans)."""
    return {EXPECTED_OUTPUT: json.dumps(expected_output, default=str)}


def shown_output(output: Any) -> Any:
    """The item's output as its experiment row shows it: the agent's answer first (its
    ``response``, who answered, whether it paused, the suite's state fields), the tool
    calls and the whole conversation last. Langfuse's table shows an output's first 1,000
    characters: the serialized ``{"messages": …}`` state hid the answer (in 8 of 11 items
    against the real v4 server)."""
    if not isinstance(output, dict):
        return output
    first, last = ("response", "answered_by", "paused"), ("tool_calls", "messages", "transcript")
    return {**{k: output[k] for k in first if k in output},
            **{k: v for k, v in output.items() if k not in first + last},
            **{k: output[k] for k in last if k in output}}  # fmt: skip


_MAJORS: dict[LangfuseSettings, int] = {}


def reads_experiments(settings: LangfuseSettings) -> bool:
    """Whether the server groups experiments from span attributes: v4 (its default
    events-only write mode). False for v3, and while the version cannot be read (asked
    again next time: a server that was down is not taken for v3 for good)."""
    if settings not in _MAJORS:
        try:
            _MAJORS[settings] = major_version(settings.server_version())
        except Exception:  # unreachable or unreadable: the session stays the run's anchor
            return False
    return _MAJORS[settings] >= 4


_DUAL: dict[LangfuseSettings, bool] = {}


def keeps_dataset_runs(settings: LangfuseSettings) -> bool:
    """Whether a v4 server also keeps v3's dataset runs: its dual write mode
    (``LANGFUSE_MIGRATION_V4_WRITE_MODE=dual``, for a migration from v3). Its Datasets list
    counts those runs and its dataset run pages read them, and its users see the
    span-attribute experiments only with the V4 preview on, so the run is linked both ways.
    Told apart as the server does it: v3's reads answer 404 in events_only (the default)
    and 200 in dual (web/src/pages/api/public/traces/index.ts, v4.16.0). False while it
    cannot be told (asked again next time)."""
    if settings not in _DUAL:
        try:
            with settings.http() as http:
                status = http.get("/api/public/traces", params={"limit": 1}).status_code
        except Exception:
            return False
        if status not in (200, 404):
            return False
        _DUAL[settings] = status == 200
    return _DUAL[settings]


@dataclass(frozen=True)
class ExperimentDataset:
    """The dataset a v4 run's spans name, and each case's item in it."""

    id: str
    items: dict[str, str]  # case id → dataset item id


def experiment_dataset(
    settings: LangfuseSettings, client: Any, suite: str, cases: Sequence[GoldenCase],
    ref: LangfuseDatasetRef | None = None,
) -> ExperimentDataset | None:  # fmt: skip
    """On a server that groups experiments from span attributes (v4): the dataset the
    run's items belong to (a ``langfuse:`` suite's own; else the suite's, synced) with its
    id, so the run's spans name it and its items (Datasets → the dataset → its runs).
    None on v3 (``link_run`` links the items after the run) and when Langfuse cannot say
    (the run goes on; its experiment is then listed without a dataset). Never raises."""
    if not reads_experiments(settings):
        return None
    try:
        linked = linked_items(client, suite, cases, ref)
        dataset = client.api.datasets.get(quote(linked.name, safe=""))
        return ExperimentDataset(str(dataset.id), linked.items)
    except Exception:  # Langfuse trouble never fails an evaluation
        return None


@dataclass(frozen=True)
class Linked:
    """Where a run's means go: the dataset run's id (None: the run's session), and why a
    v3 run could not be linked (None: it was, or there was nothing to do)."""

    dataset_run_id: str | None
    problem: str | None = None
    url: str | None = None  # where its experiment opens in Langfuse (v4)
    compared: bool = False  # the url compares it with its baseline's experiment

    def line(self) -> str:
        """What the CLI's ``Langfuse:`` line says of it: the v4 experiment and its link,
        the v3 dataset run, or why it is not linked."""
        if self.dataset_run_id is None:
            return f"experiment not linked: {self.problem}"
        if self.url is None:
            return f"dataset run {self.dataset_run_id}"
        opens = "compared with its baseline's" if self.compared else "opens"
        said = f"experiment {self.dataset_run_id} ({opens}: {self.url})"
        return f"{said}; its v3 dataset run not written: {self.problem}" if self.problem else said


def experiment_url(settings: LangfuseSettings, run_id: str,
                   baseline_run_id: str | None = None) -> str | None:  # fmt: skip
    """Where the run's experiment opens in Langfuse's UI (v4: Experiments → its results),
    from the project the keys belong to (GET /api/public/projects); with a baseline run,
    compared with the baseline's experiment, the baseline first, as Langfuse's own
    comparison links are made (``?baseline=<id>&c=<id>``: toExperimentsResultsUrl,
    web/src/features/experiments/utils/experimentUrlTranslation.ts, v4.16.0). None when the
    server does not group experiments or cannot say. Never raises."""
    if not reads_experiments(settings):
        return None
    try:
        with settings.http() as http:
            answer = http.get("/api/public/projects")
            answer.raise_for_status()
            project = answer.json()["data"][0]["id"]
    except Exception:  # Langfuse trouble never fails an evaluation
        return None
    ids = [experiment_id(baseline_run_id)] if baseline_run_id else []
    query = urlencode([("baseline", (ids or [experiment_id(run_id)])[0]),
                       *([("c", experiment_id(run_id))] if ids else [])])  # fmt: skip
    return f"{settings.base_url.rstrip('/')}/project/{project}/experiments/results?{query}"


def link_run(settings: LangfuseSettings, client: Any, cases: Sequence[GoldenCase],
             run: RunRecord, outputs: Sequence[ItemOutput],
             ref: LangfuseDatasetRef | None = None,
             verdict: RunVerdict | None = None) -> Linked:  # fmt: skip
    """The run's experiment: on v4 the span attributes already made it (in dual mode its
    v3 dataset run is written too); on v3 the dataset run. Never raises."""
    if not reads_experiments(settings):
        return post_run_items(settings, client, cases, run, outputs, ref, verdict)
    linked = Linked(experiment_id(run.run_id))
    if keeps_dataset_runs(settings):  # dual mode: its dataset run too, under the same name
        legacy = post_run_items(settings, client, cases, run, outputs, ref, verdict)
        return dataclasses.replace(linked, problem=legacy.problem)
    return linked


def post_run_items(settings: LangfuseSettings, client: Any, cases: Sequence[GoldenCase],
                   run: RunRecord, outputs: Sequence[ItemOutput],
                   ref: LangfuseDatasetRef | None = None,
                   verdict: RunVerdict | None = None) -> Linked:  # fmt: skip
    """Every output linked as a dataset run item of its dataset (a ``langfuse:`` suite's
    own, ``ref``; else the suite's, synced first): v3's dataset run, made by its first
    item with the run's metadata and, written after the verdict, the verdict's (Langfuse
    keeps a run's metadata from its first item: createOrFetchDatasetRun). Never raises."""
    suite, run_id = run.suite, run.run_id
    where = f"dataset run of {ref.name if ref else dataset_name(suite)}"
    try:
        linked = linked_items(client, suite, cases, ref)
        dataset_run_id = None
        with settings.http() as http:
            for out in outputs:
                if out.item_id not in linked.items:
                    return Linked(None, f"{where}: no item for case {out.item_id!r}")
                response = http.post("/api/public/dataset-run-items", json={
                    "runName": run_id, "runDescription": f"eval-pipeline run of {suite}",
                    "metadata": {**run_metadata(run), **(verdict.metadata() if verdict else {})},
                    "datasetItemId": linked.items[out.item_id],
                    "traceId": item_trace_id(out.source_run_id or run_id, out.item_id,
                                             out.repeat)})  # fmt: skip
                if response.status_code != 200:
                    why = describe_status(response.status_code, response.text[:200])
                    return Linked(None, f"{where}: {why}")
                dataset_run_id = response.json().get("datasetRunId")
        return Linked(dataset_run_id)
    except Exception as exc:  # Langfuse trouble never fails an evaluation
        return Linked(None, f"{where}: {type(exc).__name__}: {exc}")
