"""Evaluators and agent kinds are registered by their declaration (evaluators/registry.py,
agents/adapters/kinds.py): adding one touches one module, and nothing that lists them can
drift from the registry."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
from click.testing import CliRunner

import eval_pipeline.evaluators as evaluators
from eval_pipeline.agents.adapters.kinds import KINDS
from eval_pipeline.cli import main
from eval_pipeline.evaluators import registry
from eval_pipeline.evaluators.base import evaluator
from eval_pipeline_tests.helpers import clean_cli_env, copy_project

TOY = Path(__file__).parent / "toys" / "item_count_evaluator.py"
TOY_KIND = Path(__file__).parent / "toys" / "oracle_kind.py"


@pytest.fixture
def toy_registered():
    """The toy module executed (it registers itself); unregistered afterwards."""
    runpy.run_path(str(TOY))
    yield registry.ITEM["item_count_matches"]
    registry.ITEM.pop("item_count_matches")


def test_every_registered_evaluator_is_exported_and_described():
    for entry in [*registry.ITEM.values(), *registry.RUN.values()]:
        assert entry.function.__name__ in evaluators.__all__, entry.name
        assert entry.about, entry.name
    for name in evaluators.__all__:
        assert hasattr(evaluators, name), name
    assert registry.RUN["avg_order_correctness"].kind == "run"


def test_a_declaration_says_what_it_scores_and_names_one_evaluator():
    with pytest.raises(ValueError, match="say what it scores in a docstring"):
        registry.builtin(evaluator(lambda **kw: 1.0), name="silent")
    with pytest.raises(ValueError, match="two built-in item evaluators are named"):
        registry.builtin(evaluators.order_correctness)
    assert "silent" not in registry.ITEM


def test_an_evaluator_added_in_one_file_runs_in_a_suite(toy_registered, tmp_path, monkeypatch):
    assert toy_registered.fields.reads == ("expected_output.expected_items",)
    assert "`item_count_matches`" in registry.reference()
    project = copy_project(tmp_path)
    listed = "      - tool_call_accuracy\n"
    project.write_text(
        project.read_text().replace(listed, f"{listed}      - item_count_matches\n", 1)
    )
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "smoke",
                                       "--json", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "item_count_matches" in result.output
    items = json.loads(out.read_text())["items"]
    assert all(i["scores"]["item_count_matches"] in (0.0, 1.0) for i in items)


@pytest.fixture
def toy_kind():
    runpy.run_path(str(TOY_KIND))
    yield KINDS["oracle"]
    KINDS.pop("oracle")


def test_an_agent_kind_added_in_one_file_runs_a_suite(toy_kind, tmp_path, monkeypatch):
    project = copy_project(tmp_path)
    text = project.read_text()
    graph = ("      graph: eval_pipeline.agents.drive_thru.graph:build\n"
             "      input_map: {messages: customer_utterance}\n"
             "      state_fields: [current_order]\n")  # fmt: skip
    assert graph in text
    project.write_text(text.replace(graph, "      oracle: expected_items\n", 1))
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["run", "--suite", "drive_thru", "--tier", "smoke",
                                       "--json", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    body = json.loads(out.read_text())
    assert body["summary"]["metrics"]["order_correctness"] == 1.0  # it answers with the key


def test_agent_fields_are_checked_by_their_kind_in_the_users_words(tmp_path, monkeypatch):
    project = copy_project(tmp_path)
    text = project.read_text()
    graph = "      graph: eval_pipeline.agents.drive_thru.graph:build\n"
    project.write_text(text.replace(graph, "      http: http://127.0.0.1:9/agent\n", 1))
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    result = CliRunner().invoke(main, ["run", "--suite", "drive_thru"], terminal_width=400)
    text = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "field 'agent.input_map': unknown field; it is a field of graph agents" in text
    assert "field 'agent.state_fields': unknown field; it is a field of graph agents" in text
