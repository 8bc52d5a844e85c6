"""Our evaluators work inside langfuse.run_experiment and agree with our own runner."""


import pytest
from langfuse import Langfuse

from eval_pipeline.core.running.runner import RunnerConfig, run_agent_sync
from eval_pipeline.core.scoring.apply import score_items
from eval_pipeline.core.suites.cases import select_tier
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry
from eval_pipeline.llm.model_settings import LLMSettings
from eval_pipeline_tests.helpers import EXAMPLES
from eval_pipeline_tests.helpers import suite as project_suite


def test_run_experiment_gives_the_same_values_as_our_runner(monkeypatch):
    for var in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    suite = project_suite("drive_thru")
    cases = select_tier(suite.load_cases(), "smoke")
    # version 2 is imperfect on purpose
    prompt = LocalPromptRegistry(EXAMPLES / "prompts").get(suite.prompt_name, 2)
    agent = suite.make_agent(prompt, LLMSettings())
    by_id = {c.id: c for c in cases}

    async def task(*, item, **kwargs):  # Langfuse awaits async tasks
        case = by_id[item["metadata"]["id"]]
        return (await agent.run(case, repeat=0)).output

    data = [
        {"input": c.input, "expected_output": c.expected_output,
         "metadata": {**c.metadata.model_dump(), "id": c.id}}
        for c in cases
    ]  # fmt: skip
    result = Langfuse(tracing_enabled=False).run_experiment(
        name="drive_thru smoke",
        data=data,
        task=task,
        evaluators=list(suite.evaluators),
        run_evaluators=list(suite.run_evaluators),
        max_concurrency=1,
    )
    theirs = {
        (r.item["metadata"]["id"], e.name): e.value
        for r in result.item_results
        for e in r.evaluations
    }
    outputs = run_agent_sync(agent, cases, RunnerConfig())
    ours = {
        (s.item_id, s.evaluator): s.value for s in score_items(cases, outputs, suite.evaluators)
    }
    assert theirs == pytest.approx(ours)
    assert len(ours) == len(cases) * 3
    assert min(ours.values()) < 1.0  # the comparison covers partial and failing scores too
    (run_eval,) = result.run_evaluations
    assert run_eval.name == "avg_order_correctness"
    mean = sum(v for (_, n), v in ours.items() if n == "order_correctness") / len(cases)
    assert run_eval.value == round(mean, 3)
