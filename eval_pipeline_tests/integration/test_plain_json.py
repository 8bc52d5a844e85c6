"""Posting ChatOpenAI's payload without the SDK's transform changes nothing on the wire."""

import datetime as dt
import json

import pytest

from eval_pipeline.core.running.runner import RunnerConfig, run_agent_sync
from eval_pipeline.llm.model_settings import LLMSettings
from eval_pipeline.llm.plain_json import PlainJSONCompletions, is_plain_json
from eval_pipeline_tests.helpers import production_prompt
from eval_pipeline_tests.helpers import suite as project_suite
from eval_pipeline_tests.model_server import LocalOpenAIServer


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ({"messages": [{"role": "user", "content": "hi"}], "n": 1, "t": 0.5}, True),
        ({"tools": [{"type": "function", "function": {"parameters": {}}}], "x": None}, True),
        ({"messages": ({"role": "user"},)}, False),  # tuples need the SDK's list conversion
        ({"when": dt.date(2026, 1, 1)}, False),
        ({1: "non-string key"}, False),
        ({"nested": [{"deep": [object()]}]}, False),
    ],
)
def test_is_plain_json(value, plain):
    assert is_plain_json(value) is plain


def wire_log(suite_name: str, plain: bool, base_url: str) -> list[dict]:
    """Every request the suite's agent sends for its smoke cases, as seen on the wire."""
    suite = project_suite(suite_name)
    prompt = production_prompt(suite)
    settings = LLMSettings.create(base_url=base_url, api_key="sk-wire-test", model="offline")
    agent = suite.make_agent(prompt, settings.with_prompt_config(prompt.config))
    model = agent.ctx.model  # the run's model, which the factory bound its tools to
    assert isinstance(model.async_client, PlainJSONCompletions)  # what create_chat_model builds
    if not plain:
        model.async_client = model.root_async_client.chat.completions
    sent: list[dict] = []

    async def record(request):
        sent.append(
            {
                "url": str(request.url),
                "authorization": request.headers.get("authorization"),
                "content-type": request.headers.get("content-type"),
                "body": json.loads(request.content),
            }
        )

    model.http_async_client.event_hooks["request"].append(record)
    cases = [c for c in suite.load_cases() if c.metadata.tier == "smoke"]
    outputs = run_agent_sync(agent, cases, RunnerConfig(concurrency=1))
    assert all(o.error is None for o in outputs)
    return sent


@pytest.mark.parametrize("suite_name", ["drive_thru", "order_management"])
def test_same_requests_as_the_sdk(suite_name):
    with LocalOpenAIServer() as server:
        ours = wire_log(suite_name, plain=True, base_url=server.base_url)
        sdk = wire_log(suite_name, plain=False, base_url=server.base_url)
    assert len(ours) > len({r["body"]["messages"][1]["content"] for r in ours})  # multi-turn
    assert ours == sdk
    assert ours[0]["authorization"] == "Bearer sk-wire-test"
    assert any(r["body"].get("tools") for r in ours)
