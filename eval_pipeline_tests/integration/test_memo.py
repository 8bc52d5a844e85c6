"""Incremental re-evaluation: memo keys, cache policies, and resuming a crashed run."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import yaml

from eval_pipeline.core import evaluation
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.running.memo import MemoScope, check_policy, source_fingerprint
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.llm.model_settings import LLMSettings
from eval_pipeline_tests.helpers import EXAMPLES, prompt, suite


def at(name: str, datasets: Path):
    """A suite of the project with its dataset copied under ``datasets``."""
    return dataclasses.replace(suite(name), dataset_dir=datasets / name)


class Crash(BaseException):
    """Not an Exception: the runner does not turn it into an item error (like a kill)."""


class CountingAgent:
    """Counts agent invocations; optionally dies after ``crash_after`` of them."""

    def __init__(self, inner, crash_after: int | None = None):
        self.inner, self.crash_after, self.calls = inner, crash_after, []

    async def run(self, case, *, repeat, callbacks=()):
        if self.crash_after is not None and len(self.calls) >= self.crash_after:
            raise Crash()
        self.calls.append((case.id, repeat))
        return await self.inner.run(case, repeat=repeat, callbacks=callbacks)


@pytest.fixture
def datasets(tmp_path) -> Path:
    target = tmp_path / "datasets"
    shutil.copytree(EXAMPLES / "datasets" / "drive_thru", target / "drive_thru",
                    ignore=shutil.ignore_patterns("traces"))  # fmt: skip
    return target


@pytest.fixture
def store(tmp_path):
    with ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}") as s:
        yield s


def evaluate(store, datasets, *, cache="reuse", version=1, settings=None, chosen=None,
             repeats=1, crash_after=None, run_id=None, tier="smoke",
             max_attempts=None):  # fmt: skip
    """One run through the real agent (default: drive_thru); returns (run, outputs, agent
    calls)."""
    chosen = chosen or at("drive_thru", datasets)
    version_ = prompt(chosen, version)
    settings = (settings or LLMSettings()).with_prompt_config(version_.config)
    request = RunOptions(tier=tier, repeats=repeats, concurrency=1, cache=cache)
    plan = evaluation.plan(chosen, version_, settings.public_params(), request, run_id=run_id)
    if max_attempts is not None:
        plan.runner = dataclasses.replace(plan.runner, max_attempts=max_attempts)
    store.create_run(plan.run)
    agent = CountingAgent(chosen.make_agent(version_, settings), crash_after)
    return plan.run, evaluation.produce(store, plan, agent), agent.calls


def test_unchanged_suite_reruns_with_zero_calls_and_identical_outputs(store, datasets):
    first, cold, calls = evaluate(store, datasets)
    second, warm, warm_calls = evaluate(store, datasets)
    assert len(calls) == 11 and warm_calls == []
    assert [o.output for o in warm] == [o.output for o in cold]
    assert {o.source_run_id for o in warm} == {first.run_id}
    assert all(o.source_run_id is None for o in cold)
    stored = store.read_outputs(second.run_id)
    assert len(stored) == 11 and {o.source_run_id for o in stored} == {first.run_id}


def test_changing_one_case_reruns_that_item_only(store, datasets):
    evaluate(store, datasets)
    path = datasets / "drive_thru" / "cases.yaml"
    document = yaml.safe_load(path.read_text())
    cases = document["cases"] if isinstance(document, dict) else document
    smoke = next(c for c in cases if c["metadata"]["tier"] == "smoke")
    smoke["input"]["customer_utterance"] += ", thanks"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    _, _, calls = evaluate(store, datasets)
    assert calls == [(smoke["id"], 0)]


@pytest.mark.parametrize(
    "change",
    ["prompt version", "model params", "agent version", "agent data file", "added repeat"],
)
def test_any_key_part_changed_is_a_miss(store, datasets, change):
    evaluate(store, datasets)
    options: dict = {}
    if change == "prompt version":
        options["version"] = 2
    elif change == "model params":
        options["settings"] = LLMSettings(seed=7)
    elif change == "agent version":
        options["chosen"] = dataclasses.replace(at("drive_thru", datasets), agent_version="2")
    elif change == "agent data file":
        (datasets / "drive_thru" / "notes.txt").write_text("a file the agent could read")
    elif change == "added repeat":
        options["repeats"] = 2
    _, _, calls = evaluate(store, datasets, **options)
    if change == "added repeat":  # repeat 0 is memoized, repeat 1 is new
        assert sorted(calls) == sorted((case_id, 1) for case_id, _ in calls) and len(calls) == 11
    else:
        assert len(calls) == 11


def test_timeouts_and_retry_counts_are_not_part_of_the_key(store, datasets):
    evaluate(store, datasets)
    _, _, calls = evaluate(store, datasets, settings=LLMSettings(timeout_s=5), max_attempts=1)
    assert calls == []


def test_prompt_change_reruns_only_that_suite(store, datasets):
    for name in ("order_management", "product_discovery"):  # orders refer to the catalogue
        shutil.copytree(EXAMPLES / "datasets" / name, datasets / name)
    evaluate(store, datasets)
    other = at("order_management", datasets)
    _, _, calls = evaluate(store, datasets, chosen=other)
    assert len(calls) == 5
    _, _, calls = evaluate(store, datasets, version=2)  # drive_thru's prompt moved
    assert len(calls) == 11
    _, _, again = evaluate(store, datasets, chosen=other)
    assert again == []


def test_refresh_ignores_hits_but_rewrites_the_memo(store, datasets):
    evaluate(store, datasets)
    refreshed, outputs, calls = evaluate(store, datasets, cache="refresh")
    assert len(calls) == 11 and all(o.source_run_id is None for o in outputs)
    _, warm, warm_calls = evaluate(store, datasets)
    assert warm_calls == [] and {o.source_run_id for o in warm} == {refreshed.run_id}


def test_off_neither_reads_nor_writes(store, datasets):
    evaluate(store, datasets, cache="off")
    _, _, calls = evaluate(store, datasets)
    assert len(calls) == 11
    _, _, off_calls = evaluate(store, datasets, cache="off")
    assert len(off_calls) == 11


@pytest.mark.parametrize("policy", ["reuse", "refresh"])
def test_a_crashed_runs_completed_items_are_reused_on_the_rerun(store, datasets, policy):
    with pytest.raises(Crash):
        evaluate(store, datasets, cache=policy, crash_after=4, run_id="nightly-1")
    # Re-execution keeps the run id (see eval_run_id): refresh takes this run's own items.
    run, outputs, calls = evaluate(store, datasets, cache=policy, run_id="nightly-1")
    assert len(calls) == 7
    assert sum(1 for o in outputs if o.source_run_id == "nightly-1") == 4
    assert len(store.read_outputs(run.run_id)) == 11
    # A different run under refresh does not see them.
    _, _, fresh = evaluate(store, datasets, cache="refresh")
    assert len(fresh) == 11


def test_errors_are_never_memoized(store, datasets):
    class Failing(CountingAgent):
        async def run(self, case, *, repeat, callbacks=()):
            self.calls.append((case.id, repeat))
            raise ValueError("model said no")

    drive_thru = at("drive_thru", datasets)
    version_ = prompt(drive_thru, 1)
    plan = evaluation.plan(drive_thru, version_, LLMSettings().public_params(),
                           RunOptions(tier="smoke"))  # fmt: skip
    plan.runner = dataclasses.replace(plan.runner, max_attempts=1)
    store.create_run(plan.run)
    outputs = evaluation.produce(store, plan, Failing(None))
    assert all(o.error for o in outputs)
    _, _, calls = evaluate(store, datasets)
    assert len(calls) == 11


def test_memo_key_ignores_nothing_else(datasets):
    case = at("drive_thru", datasets).load_cases()[0]
    from eval_pipeline_tests.integration.test_results_store import run_record

    base = run_record(agent_version="1+abc", model_params={"model": "m", "timeout_s": 5})
    key = MemoScope.of(base).key(case, 0)
    assert MemoScope.of(dataclasses.replace(base, run_id="other", tier="smoke")).key(case, 0) == key
    for field, value in [("suite", "x"), ("agent_version", "2"), ("prompt_version", "v9"),
                         ("prompt_hash", "other"), ("model_params", {"model": "n"})]:  # fmt: skip
        assert MemoScope.of(dataclasses.replace(base, **{field: value})).key(case, 0) != key
    assert MemoScope.of(base).key(case, 1) != key
    edited = case.model_copy(update={"expected_output": {"changed": True}})
    assert MemoScope.of(base).key(edited, 0) != key


def test_source_fingerprint_follows_file_content(tmp_path):
    (tmp_path / "a.py").write_text("x = 1")
    before = source_fingerprint([tmp_path])
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert source_fingerprint([tmp_path]) == before
    (tmp_path / "a.py").write_text("x = 2")
    assert source_fingerprint([tmp_path]) != before


def test_unknown_policy_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="reuse, refresh, off"):
        check_policy("sometimes")
