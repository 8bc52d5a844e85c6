"""Which stored run is a suite's baseline (core/store/baselines.py ``latest_baseline``,
core/evaluation/baseline.py ``unfit``): runs retired by the team, runs on init's example
cases and runs whose every item failed in the agent are passed over, and a run of the
baseline's own version on new cases is not compared with its predecessor on old ones (it
was, "not comparable", ERROR, so it could never become the baseline: a loop)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import yaml

from eval_pipeline.cli.init import CASES
from eval_pipeline.core.evaluation.baseline import unfit
from eval_pipeline.core.store.baselines import latest_baseline
from eval_pipeline.core.store.records import ItemOutput, RunRecord, RunStatus
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.store.stored_changes import BaselineChange
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.suites.placeholders import EXAMPLES, placeholder_cases

T0 = datetime(2026, 11, 20, tzinfo=UTC)


def record(run_id: str, minutes: int, version: str = "v1", dataset: str = "d1",
           **fields) -> RunRecord:  # fmt: skip
    return RunRecord(run_id=run_id, suite="s", prompt_name="p", prompt_version=version,
                     prompt_hash="h", dataset_version=dataset, model="m", tier="full",
                     started_at=T0 + timedelta(minutes=minutes), **fields)  # fmt: skip


def store_with(tmp_path, *runs: RunRecord) -> ResultsStore:
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    for run in runs:
        store.create_run(run)
        store.settle_run(run.run_id, RunStatus.COMPLETE, not_baseline=run.not_baseline)
    return store


def change(run_id: str, action: str, minutes: int) -> BaselineChange:
    return BaselineChange("s", run_id, action, "ann", "why", T0 + timedelta(minutes=minutes))


def test_retired_and_unfit_runs_are_passed_over_and_a_restored_one_is_chosen(tmp_path):
    store = store_with(tmp_path, record("old", 0), record("unfit", 10, not_baseline="crash"),
                       record("new", 20))  # fmt: skip
    candidate = record("cand", 30, version="v2")
    assert latest_baseline(store, candidate, "s", "v1").run.run_id == "new"
    store.record_change(change("new", "retire", 1))
    found = latest_baseline(store, candidate, "s", "v1")
    assert found.run.run_id == "old"
    assert [(p.run.run_id, p.why) for p in found.passed_over] == [
        ("new", "retired by ann on 2026-11-20 00:01 UTC: why"), ("unfit", "crash")]
    store.record_change(change("new", "restore", 2))
    assert latest_baseline(store, candidate, "s", "v1").run.run_id == "new"
    assert store.retired("s") == {}
    assert [c.action for c in store.changes("s")] == ["retire", "restore"]  # the history


def test_the_baseline_versions_own_run_on_new_cases_becomes_the_baseline(tmp_path):
    """The nightly run of production after the cases changed: its previous run ran other
    cases, so it has no baseline (and says why) rather than a "not comparable" ERROR; a
    run of another version is still compared with that previous run (not comparable)."""
    store = store_with(tmp_path, record("before", 0, dataset="d1"))
    nightly = record("nightly", 10, dataset="d2")
    found = latest_baseline(store, nightly, "s", "v1")
    assert found.run is None
    assert "ran other cases (dataset d1, now d2)" in found.why_none
    assert "becomes the baseline" in found.why_none
    assert latest_baseline(store, record("same", 10), "s", "v1").run.run_id == "before"
    assert latest_baseline(store, record("v2", 10, "v2", "d2"), "s", "v1").run.run_id == "before"


def test_inits_examples_as_written_are_placeholders_and_edited_ones_are_not():
    written = [GoldenCase.model_validate(c) for c in yaml.safe_load(
        CASES.format(name="support", tool_hint="[a]", ids=[e for e, _ in EXAMPLES],
                     messages=[m for _, m in EXAMPLES]))]  # fmt: skip
    assert placeholder_cases(written) == [f"support-{end}" for end, _ in EXAMPLES]
    edited = written[0].model_copy(update={"input": {"message": "Where is order 7?"}})
    renamed = written[2].model_copy(update={"id": "greeting"})
    assert placeholder_cases([edited, renamed, written[1]]) == ["support-example-02"]


def test_a_run_is_unfit_on_placeholders_or_when_every_item_failed_in_the_agent():
    case = GoldenCase(id="support-example-03", input={"message": "Hello!"},
                      metadata={"category": "c", "difficulty": "easy", "tier": "full"})  # fmt: skip
    real = case.model_copy(update={"id": "real"})
    crashed = [ItemOutput("a", 0, None, error="KeyError: boom", error_kind="KeyError",
                          fault="agent"),
               ItemOutput("b", 0, None, error="KeyError: boom", error_kind="KeyError",
                          fault="agent")]  # fmt: skip
    assert "are the examples `eval-pipeline init` wrote" in unfit([case, real], [])
    assert unfit([real], crashed).startswith("not a baseline: every item (2) failed in the "
                                             "agent (first: a: KeyError: boom)")  # fmt: skip
    outage = [crashed[0], ItemOutput("b", 0, None, error="down", fault="infrastructure")]
    assert unfit([real], outage) is None  # an ERROR run: never complete anyway
    assert unfit([real], [crashed[0], ItemOutput("b", 0, {"response": "ok"})]) is None
