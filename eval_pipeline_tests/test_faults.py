"""Faults injected by the local OpenAI-compatible server (real HTTP): the run finishes with
every item exactly once, transient faults retried, permanent ones recorded as errors."""

from __future__ import annotations

import random

import pytest
from dagster import MultiPartitionKey, instance_for_test, materialize

from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.defs.evaluation.assets import build_evaluation_assets
from eval_pipeline.defs.partitions import build_partitions
from eval_pipeline.defs.resources import LLMResource
from eval_pipeline_tests.helpers import SUITE_NAMES, copy_project, eval_resources
from eval_pipeline_tests.model_server import LocalOpenAIServer

ASSETS = build_evaluation_assets(build_partitions(SUITE_NAMES)).evaluation


class FaultPlan:
    """20% 429 (with Retry-After), 5% 500, 2% hang past the client timeout, 2% connection
    reset mid-response, drawn from a seeded stream; utterances about hash browns always get
    a 400 (a permanent error: retrying cannot help)."""

    def __init__(self, seed: int = 7):
        self.rng = random.Random(seed)

    def __call__(self, body):
        text = " ".join(str(m.get("content")) for m in body["messages"] if m["role"] == "user")
        if "hash brown" in text.lower():
            return 400
        draw = self.rng.random()
        for limit, fault in ((0.20, 429), (0.25, 500), (0.27, "hang"), (0.29, "reset")):
            if draw < limit:
                return fault
        return None


@pytest.fixture
def env(tmp_path):
    project = copy_project(tmp_path)
    (project.parent / "datasets" / "drive_thru" / "thresholds.yaml").write_text(
        "primary_metric: order_correctness\n"  # no floors: this test is about faults
    )
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        instance.add_dynamic_partitions("prompt_version", ["v1"])
        yield instance, tmp_path, project


def test_provider_faults_lose_nothing_and_count_nothing_twice(env):
    instance, tmp_path, project = env
    with LocalOpenAIServer(fault=FaultPlan()) as server:
        resources = eval_resources(tmp_path, project=project)
        # 29% of requests fail: nine tries per model call make a lost call (0.29^9) unlikely
        resources["llm"] = LLMResource(
            base_url=server.base_url,
            api_key="sk-test",
            model="gpt-4o-mini",
            timeout_s=1.0,
            max_retries=8,
        )
        result = materialize(
            ASSETS,
            partition_key=MultiPartitionKey({"suite": "drive_thru", "prompt_version": "v1"}),
            instance=instance, resources=resources, raise_on_error=False,
            run_config={"ops": {"agent_run_outputs": {"config": {
                "tier": "full", "concurrency": 16, "timeout_s": 20}}}},
        )  # fmt: skip
        stats = dict(server.app.state.stats)
    # The permanent 400s are not the agent's failures: the run could not measure those
    # items, so its verdict is ERROR and the run fails at eval_summary (items_measured),
    # after every output, score and the summary were stored.
    assert not result.success
    measured = {e.check_name: e for e in result.get_asset_check_evaluations()}["items_measured"]
    assert not measured.passed and "failed for reasons outside the agent" in (
        measured.description or str(measured.metadata)
    )
    for kind in ("fault_429", "fault_500", "fault_hang", "fault_reset", "fault_400"):
        assert stats.get(kind, 0) > 0, f"the plan never injected {kind}: {stats}"

    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    (run,) = store.list_runs(suite="drive_thru")
    outputs = store.read_outputs(run.run_id)
    assert sorted(o.item_id for o in outputs) == sorted({o.item_id for o in outputs})
    assert len(outputs) == 47  # every item, once
    failed = {o.item_id for o in outputs if o.error}
    permanent = {o.item_id for o in outputs if o.error and "400" in o.error}
    transient = [o.error for o in outputs if o.item_id in failed - permanent]
    assert failed == permanent and permanent, transient  # transient faults all retried away
    assert all(o.output is not None for o in outputs if o.item_id not in failed)
    scores = store.read_scores(run.run_id)
    assert len(scores) == 47 * 3 == len({(s.item_id, s.evaluator) for s in scores})
    assert all(s.value == 0.0 for s in scores if s.item_id in failed)
    summary = store.read_summary(run.run_id)
    assert (summary.n_items, summary.n_errors) == (47, len(failed))

    meta = result.asset_materializations_for_node("agent_run_outputs")[0].metadata
    assert meta["provider_status_429"].value > 0 and meta["provider_status_500"].value > 0
    assert meta["provider_no_response"].value > 0  # hangs ended by the client timeout
    refused = sum(stats[f"fault_{kind}"] for kind in (429, 500, 400, "hang"))
    assert meta["provider_failed_requests"].value == refused  # resets arrive as a 200
    assert meta["provider_requests"].value == stats["requests"]
