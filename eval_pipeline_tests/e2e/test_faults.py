"""Faults injected by the local OpenAI-compatible server (real HTTP): the run finishes with
every item exactly once, transient faults retried, permanent ones recorded as errors."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dagster import instance_for_test, materialize

from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.defs.evaluation.assets import build_evaluation_assets
from eval_pipeline.defs.partitions import EvalPartition, add_partitions, build_partitions
from eval_pipeline.defs.resources import LLMResource
from eval_pipeline_tests.helpers import (
    CONFIG_ENV,
    EXAMPLES,
    SUITE_NAMES,
    copy_project,
    eval_resources,
    materialized,
)
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
        add_partitions(instance, [EvalPartition("drive_thru", "v1")])
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
            timeout_s=3.0,  # a hang ends here; an answer on a busy machine does not
            max_retries=8,
        )
        # an item makes several model calls, each up to nine tries with back-off and a few
        # 3 s hangs among them: the per-item timeout is kept out of the way (not measured here)
        result = materialize(
            ASSETS,
            partition_key=EvalPartition("drive_thru", "v1").key,
            instance=instance, resources=resources, raise_on_error=False,
            run_config={"ops": {"agent_run_outputs": {"config": {
                "tier": "full", "concurrency": 16, "timeout_s": 120}}}},
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

    meta = materialized(result, "agent_run_outputs")
    assert meta["provider_status_429"].value > 0 and meta["provider_status_500"].value > 0
    assert meta["provider_no_response"].value > 0  # hangs ended by the client timeout
    refused = sum(stats[f"fault_{kind}"] for kind in (429, 500, 400, "hang"))
    assert meta["provider_failed_requests"].value == refused  # resets arrive as a 200
    assert meta["provider_requests"].value == stats["requests"]


CLI = str(Path(sys.executable).parent / "eval-pipeline")


def run_against(tmp_path: Path, fault) -> tuple[subprocess.CompletedProcess, dict]:
    """``eval-pipeline run --suite drive_thru`` in a copy of the examples outside this
    repository, its model endpoint answering with ``fault``; the run and its --json."""
    project = copy_project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    with LocalOpenAIServer(fault=fault) as server:
        env |= {"EVAL_HOME": str(tmp_path / "home"), "EVAL_LLM_BASE_URL": server.base_url,
                "EVAL_LLM_API_KEY": "sk-faults", "EVAL_LLM_MODEL": "gpt-4o-mini"}  # fmt: skip
        done = subprocess.run([CLI, "run", "--suite", "drive_thru", "--json", "out.json"],
                              cwd=project.parent, env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
    result = json.loads((project.parent / "out.json").read_text())
    return done, result


MALFORMED_KINDS = [("html", "invalid answer (HTML)"), ("no_choices", "invalid answer (no choices)"),
                   ("error_body", "invalid answer (error body)")]  # fmt: skip


@pytest.mark.parametrize(("fault", "kind"), MALFORMED_KINDS)
def test_a_200_that_is_not_a_completion_is_the_providers_fault(tmp_path, fault, kind):
    """HTTP 200 with an HTML page, with no choices, or with an error object: each was the
    agent's failure ([agent], FAIL, exit 1: a "regression"); now the provider's (ERROR,
    exit 2), counted by kind."""

    def on_hash_browns(body):
        text = " ".join(str(m.get("content")) for m in body["messages"] if m["role"] == "user")
        return fault if "hash brown" in text.lower() else None

    done, result = run_against(tmp_path, on_hash_browns)
    assert done.returncode == 2, done.stdout + done.stderr
    failed = [o for o in result["items"] if o["error"]]
    assert failed and {(o["fault"], o["error_kind"]) for o in failed} == {("infrastructure", kind)}
    cases = yaml.safe_load((EXAMPLES / "datasets" / "drive_thru" / "cases.yaml").read_text())
    asked = {c["id"] for c in cases["cases"] if "hash brown" in str(c["input"]).lower()}
    assert {o["item_id"] for o in failed} == asked
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("VERDICT: ERROR") and f"{kind} ×{len(failed)}" in last, last


def test_tool_calls_with_broken_arguments_are_named_not_blamed_on_the_endpoint(tmp_path):
    """Tool-call arguments that are not JSON were diagnosed as "the endpoint may ignore
    tools"; the run now says what happened."""
    done, _ = run_against(tmp_path, lambda body: "bad_tool_args" if body.get("tools") else None)
    said = " ".join(done.stdout.split())
    assert "returned tool calls whose arguments are not valid JSON" in said, said
    assert "may ignore tools" not in said
