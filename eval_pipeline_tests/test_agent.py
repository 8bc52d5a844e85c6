"""The drive-thru agent on the offline model, in-process and over real HTTP via ChatOpenAI."""

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from eval_pipeline.agents.drive_thru.agent import DriveThruAgent
from eval_pipeline.agents.drive_thru.tools import TOOLS
from eval_pipeline.agents.registry import get_suite
from eval_pipeline.core.cases import select_tier
from eval_pipeline.core.runner import RunnerConfig, run_agent_sync
from eval_pipeline.evaluators import order_correctness, tool_call_accuracy
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry
from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.offline import OfflineChatModel
from eval_pipeline.llm.openai_server import LocalOpenAIServer
from eval_pipeline.llm.settings import LLMSettings
from eval_pipeline_tests.helpers import production_prompt

ROOT = Path(__file__).resolve().parents[1]
PROMPT_NAME = "drive-thru/orchestrator"


@pytest.fixture(scope="module")
def cases():
    return get_suite("drive_thru", ROOT / "datasets").load_cases()


def prompt(version: int):
    return LocalPromptRegistry(ROOT / "prompts").get(PROMPT_NAME, version)


def run_all(agent, cases, repeat=0):
    async def go():
        return [await agent.run(c, repeat=repeat) for c in cases]

    return asyncio.run(go())


def mean(evaluator, cases, results):
    values = [
        evaluator(output=r.output, expected_output=c.expected_output).value
        for c, r in zip(cases, results, strict=True)
    ]
    return sum(values) / len(values)


def test_offline_model_calls_tools_through_bind_tools():
    llm = OfflineChatModel().bind_tools(TOOLS)
    system = prompt(1).compile(menu="- Hash Brown [hash-brown] $1.99")
    reply = llm.invoke([SystemMessage(system), HumanMessage("Two hash browns please")])
    assert reply.tool_calls == [
        {"name": "lookup_menu_item", "args": {"query": "hash browns"}, "id": "call_0_lookup",
         "type": "tool_call"}
    ]  # fmt: skip
    assert reply.usage_metadata["input_tokens"] > 0
    greeting = llm.invoke([SystemMessage(system), HumanMessage("Hi, good morning!")])
    assert not greeting.tool_calls and greeting.content


def test_outputs_follow_the_contract_and_items_do_not_share_state(cases):
    agent = DriveThruAgent(OfflineChatModel(), prompt(1), model_name="offline")
    first, second = run_all(agent, [cases[0], cases[0]])
    assert first.output == second.output  # a fresh graph per item: nothing carried over
    out = first.output
    assert set(out) == {"order_items", "tool_calls", "response", "item_count"}
    assert out["order_items"][0].keys() == {"item_id", "name", "quantity", "size", "modifiers"}
    assert out["item_count"] == sum(i["quantity"] for i in out["order_items"])


def test_worse_prompt_scores_worse(cases):
    good = run_all(DriveThruAgent(OfflineChatModel(), prompt(1), model_name="offline"), cases)
    bad = run_all(DriveThruAgent(OfflineChatModel(), prompt(2), model_name="offline"), cases)
    assert mean(order_correctness, cases, good) >= 0.95
    assert mean(order_correctness, cases, bad) < 0.95
    assert mean(tool_call_accuracy, cases, bad) < 0.6


def test_temperature_makes_seeded_mistakes(cases):
    def agent():
        return DriveThruAgent(OfflineChatModel(temperature=1.0), prompt(1), model_name="offline")

    a, b = run_all(agent(), cases), run_all(agent(), cases)
    other_repeat = run_all(agent(), cases, repeat=1)
    assert [r.output for r in a] == [r.output for r in b]  # same seed → same answers
    assert [r.output for r in a] != [r.output for r in other_repeat]
    assert mean(order_correctness, cases, a) < 1.0


def test_chat_openai_over_http_gives_the_same_orders(cases):
    smoke = select_tier(cases, "smoke")
    offline = run_all(DriveThruAgent(OfflineChatModel(), prompt(1), model_name="offline"), smoke)
    with LocalOpenAIServer() as server:
        settings = LLMSettings.create(
            base_url=server.base_url, api_key="sk-test-not-secret", model="gpt-4o-mini"
        )
        llm = create_chat_model(settings)
        assert type(llm).__name__ == "ChatOpenAI"
        over_http = run_all(DriveThruAgent(llm, prompt(1), model_name=settings.model), smoke)
        assert server.requests >= len(smoke)
    assert [r.output["order_items"] for r in over_http] == [
        r.output["order_items"] for r in offline
    ]
    assert [r.output["tool_calls"] for r in over_http] == [r.output["tool_calls"] for r in offline]
    assert all(r.input_tokens > 0 for r in over_http)


def test_runs_one_after_another_in_one_process_share_no_dead_connection(cases):
    """Every evaluation run has its own event loop; a model built for a run must not reuse
    a connection pool bound to an earlier run's (closed) loop."""
    smoke = select_tier(cases, "smoke")[:3]
    with LocalOpenAIServer() as server:
        settings = LLMSettings.create(base_url=server.base_url, api_key="sk-test", max_retries=0)
        for _ in range(2):  # e.g. the demo's suites, or two partitions in one Dagster process
            agent = DriveThruAgent(create_chat_model(settings), prompt(1), model_name="m")
            outputs = run_agent_sync(agent, smoke, RunnerConfig(max_attempts=1))
            assert [o.error for o in outputs] == [None] * 3


def test_refused_blind_add_is_looked_up_and_retried(cases):
    """Without the lookup-first rule the model adds from the menu text; when the tool
    refuses (an unknown modifier name), it looks the item up and adds it properly."""
    from eval_pipeline.core.prompts import PromptVersion

    text = "Take breakfast orders. Pass modifiers to add_item_to_order.\n\nMenu:\n{{menu}}"
    no_lookup_rule = PromptVersion(name="t", version=1, type="text", prompt=text)
    case = next(c for c in cases if c.id == "dt-modifiers-02")  # "Egg McMuffin, no cheese"
    (result,) = run_all(DriveThruAgent(OfflineChatModel(), no_lookup_rule, model_name="x"), [case])
    assert result.output["tool_calls"] == ["add_item_to_order", "lookup_menu_item",
                                           "add_item_to_order"]  # fmt: skip
    assert order_correctness(output=result.output, expected_output=case.expected_output).value == 1
    assert (
        tool_call_accuracy(output=result.output, expected_output=case.expected_output).value == 0.5
    )


def test_agent_tools_run_on_the_event_loop(monkeypatch):
    """No executor hop: every agent's tools are awaited in place, never run in a thread."""
    import functools

    from langchain_core.tools import StructuredTool

    paths: list[str] = []
    real_run, real_arun = StructuredTool._run, StructuredTool._arun

    @functools.wraps(real_run)  # LangChain reads the signature to pass run_manager
    def sync_path(self, *args, **kwargs):
        paths.append("thread")
        return real_run(self, *args, **kwargs)

    @functools.wraps(real_arun)
    async def async_path(self, *args, **kwargs):
        paths.append("loop")
        return await real_arun(self, *args, **kwargs)

    monkeypatch.setattr(StructuredTool, "_run", sync_path)
    monkeypatch.setattr(StructuredTool, "_arun", async_path)
    for name in ("drive_thru", "order_management", "product_discovery", "research"):
        suite = get_suite(name, ROOT / "datasets")
        prompt = production_prompt(suite)
        cases = select_tier(suite.load_cases(), "smoke")[:3]
        paths.clear()
        outputs = run_agent_sync(suite.make_agent(prompt, LLMSettings.create()), cases,
                                 RunnerConfig(concurrency=3))  # fmt: skip
        assert all(o.error is None for o in outputs), name
        assert "loop" in paths and "thread" not in paths, name
