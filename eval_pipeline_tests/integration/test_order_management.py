"""The order_management suite: order tools, the return rule, the offline agent, the CLI."""

from __future__ import annotations

import asyncio
import json

from click.testing import CliRunner
from eval_examples.order_management.orders import load_orders, order_tools

from eval_pipeline.cli import main
from eval_pipeline.core.suites.cases import select_tier
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry
from eval_pipeline.llm.model_settings import LLMSettings
from eval_pipeline_tests.helpers import EXAMPLES, clean_cli_env
from eval_pipeline_tests.helpers import suite as project_suite


def test_tools_and_the_return_rule():
    orders = load_orders(EXAMPLES / "datasets" / "order_management" / "orders.csv")
    assert len(orders) == 150
    tools = {t.name: t for t in order_tools(orders)}
    delivered = next(o for o in orders.values() if o["status"] == "delivered")
    shipped = next(o for o in orders.values() if o["status"] == "shipped")
    ok = json.loads(
        tools["request_return"].invoke({"order_id": delivered["order_id"], "reason": "broken"})
    )
    refused = json.loads(
        tools["request_return"].invoke({"order_id": shipped["order_id"], "reason": "changed mind"})
    )
    assert ok["accepted"] and not refused["accepted"] and "shipped" in refused["reason"]
    status = json.loads(tools["get_order_status"].invoke({"order_id": shipped["order_id"]}))
    assert status["product"] == shipped["product_name"] and status["product"]  # a name, not an id
    track = json.loads(tools["track_shipment"].invoke({"order_id": shipped["order_id"]}))
    assert track["tracking_number"].startswith("TRK")
    listed = json.loads(tools["list_orders"].invoke({"customer_id": "C001"}))
    assert len(listed) == 5 and listed == sorted(
        listed, key=lambda o: o["ordered_on"], reverse=True
    )


def run_case(case_id: str, version: int) -> dict:
    suite = project_suite("order_management")
    case = next(c for c in suite.load_cases() if c.id == case_id)
    prompt = LocalPromptRegistry(EXAMPLES / "prompts").get(suite.prompt_name, version)
    agent = suite.make_agent(prompt, LLMSettings.create(model="offline"))
    return asyncio.run(agent.run(case, repeat=0)).output


def test_the_production_prompt_checks_the_status_before_a_return():
    output = run_case("om-returns-01", 1)
    assert output["tools_called"] == ["get_order_status", "request_return"]
    steps = [m for m in output["messages"] if m.get("tool_calls")]
    assert len(steps) == 2  # status first, the return in a later step
    assert "return label RL-ORD-1004" in output["response"]
    refused = run_case("om-returns-03", 1)  # ORD-1002 is shipped: no return requested
    assert refused["tools_called"] == ["get_order_status"]
    assert "Only delivered orders can be returned" in refused["response"]


def test_dataset_and_cli(tmp_path, monkeypatch):
    cases = project_suite("order_management").load_cases()
    assert len(cases) >= 20 and len(select_tier(cases, "smoke")) >= 5
    clean_cli_env(monkeypatch, tmp_path / "home")
    result = CliRunner().invoke(main, ["run", "--suite", "order_management", "--tier", "smoke"])
    assert result.exit_code == 0, result.output
    assert "Passed: 5/5" in result.output
    worse = CliRunner().invoke(
        main, ["run", "--suite", "order_management", "--prompt-version", "2"]
    )
    assert worse.exit_code == 1
