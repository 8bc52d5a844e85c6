"""Evaluators are registered by their declaration (evaluators/registry.py): adding one
touches one module, and nothing that lists them can drift from the registry."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
from click.testing import CliRunner

import eval_pipeline.evaluators as evaluators
from eval_pipeline.cli import main
from eval_pipeline.evaluators import registry
from eval_pipeline.evaluators.base import evaluator
from eval_pipeline_tests.helpers import clean_cli_env, copy_project

TOY = Path(__file__).parent / "toys" / "item_count_evaluator.py"


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
