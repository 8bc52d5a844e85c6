"""The product_discovery suite: catalog tools, dataset, offline agent, seed 001 report."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
import yaml
from click.testing import CliRunner
from eval_examples.product_discovery.catalog import catalog_tools, load_catalog

from eval_pipeline.cli import main
from eval_pipeline.core.suites.cases import DatasetError, select_tier
from eval_pipeline.evaluators import trajectory_match
from eval_pipeline.llm.model_settings import LLMSettings
from eval_pipeline_tests.helpers import EXAMPLES, clean_cli_env, production_prompt, suite_at
from eval_pipeline_tests.helpers import suite as project_suite

CATALOG = EXAMPLES / "datasets" / "product_discovery" / "catalog.csv"


def test_catalog_and_tools():
    catalog = load_catalog(CATALOG)
    assert len(catalog.products) >= 200 and len(catalog.categories) == 12
    cheap = catalog.search("running shoes", category="running shoes", max_price=100)
    assert cheap and all(p.price <= 100 and p.category == "running shoes" for p in cheap)
    good = catalog.search("headphones", min_rating=4.5)
    assert all(p.rating >= 4.5 for p in good)
    tools = {t.name: t for t in catalog_tools(catalog)}
    assert set(tools) == {
        "search_products",
        "get_product_details",
        "get_reviews",
        "check_inventory",
    }
    first = json.loads(tools["search_products"].invoke({"query": "tent", "category": "tents"}))[0]
    stock = json.loads(tools["check_inventory"].invoke({"product_id": first["product_id"]}))
    assert stock["in_stock"] == (stock["units"] > 0)
    assert "error" in json.loads(tools["get_reviews"].invoke({"product_id": "NOPE"}))


def test_dataset_shape_and_validation(tmp_path):
    suite = project_suite("product_discovery")
    cases = suite.load_cases()
    assert len(cases) >= 20 and len(select_tier(cases, "smoke")) >= 5
    chit_chat = [c for c in cases if c.category == "chit_chat"]
    assert chit_chat and all(c.metadata.criteria["grounded"] is False for c in chit_chat)
    datasets = tmp_path / "datasets"
    shutil.copytree(EXAMPLES / "datasets" / "product_discovery", datasets / "product_discovery")
    path = datasets / "product_discovery" / "cases.yaml"
    broken = yaml.safe_load(path.read_text())
    broken[0]["expected_output"]["expected_tools"] = ["search_the_web"]
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(DatasetError, match=r"expected_tools.*search_the_web"):
        suite_at("product_discovery", datasets).load_cases()


def test_agent_grounds_answers_and_returns_an_openai_trajectory():
    suite = project_suite("product_discovery")
    case = next(c for c in suite.load_cases() if c.id == "pd-details-03")
    prompt = production_prompt(suite)
    agent = suite.make_agent(prompt, LLMSettings.create(model="offline"))
    result = asyncio.run(agent.run(case, repeat=0))
    output = result.output
    assert output["tools_called"][0] == "search_products"
    assert set(output["tools_called"][1:]) == {
        "get_product_details",
        "get_reviews",
        "check_inventory",
    }
    assert "$" in output["response"] and "Customers say" in output["response"]
    messages = output["messages"]
    assert [m["role"] for m in messages][:2] == ["user", "assistant"]
    assert len(messages[3]["tool_calls"]) == 3  # the follow-ups ran in parallel, one step
    same = trajectory_match(mode="strict")(output=messages, expected_output=messages)
    assert same.value == 1.0


def test_cli_prints_the_seed_001_report(tmp_path, monkeypatch):
    clean_cli_env(monkeypatch, tmp_path / "home")
    result = CliRunner().invoke(main, ["run", "--suite", "product_discovery", "--tier", "smoke"])
    assert result.exit_code == 0, result.output
    for text in (
        "groundedness",
        "correctness",
        "completeness",
        "overall",
        "Passed: 6/6",
        "p50/p95",
        "tokens in/out",
        "estimated cost",
    ):
        assert text in " ".join(result.output.split())  # rich wraps long lines
    worse = CliRunner().invoke(
        main, ["run", "--suite", "product_discovery", "--prompt-version", "2"]
    )
    assert worse.exit_code == 1 and "groundedness" in worse.output
