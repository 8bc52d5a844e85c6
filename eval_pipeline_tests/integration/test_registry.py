"""Evaluators and agent kinds are registered by their declaration (evaluators/registry.py,
agents/adapters/kinds.py): adding one touches one module, and nothing that lists them can
drift from the registry."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import eval_pipeline.evaluators as evaluators
from eval_pipeline.agents.adapters.kinds import KINDS
from eval_pipeline.cli import main
from eval_pipeline.core.scoring import checks
from eval_pipeline.defs.partitions import EvalPartition, add_partitions
from eval_pipeline.evaluators import registry
from eval_pipeline.evaluators.declare import evaluator
from eval_pipeline_tests.helpers import clean_cli_env, copy_project

TOY = Path(__file__).parents[1] / "toys" / "item_count_evaluator.py"
TOY_KIND = Path(__file__).parents[1] / "toys" / "oracle_kind.py"


def with_plugin(project: Path, toy: Path) -> None:
    """The toy file beside the project file, listed under ``plugins`` (how a team adds its
    own evaluator or agent kind)."""
    shutil.copy(toy, project.parent / toy.name)
    text = project.read_text()
    assert "plugins: [eval_examples]" in text
    project.write_text(text.replace("plugins: [eval_examples]",
                                    f"plugins: [eval_examples, {toy.stem}]", 1))  # fmt: skip


@pytest.fixture
def forget_toys():
    """What the toy plugins register is unregistered afterwards (one test process)."""
    yield
    registry.ITEM.pop("item_count_matches", None)
    KINDS.pop("oracle", None)
    for toy in (TOY, TOY_KIND):
        sys.modules.pop(toy.stem, None)


def test_every_registered_evaluator_is_exported_and_described():
    import eval_examples  # noqa: F401  (registers the examples' own: not built in)

    for entry in [*registry.ITEM.values(), *registry.RUN.values()]:
        assert entry.about, entry.name
        if registry.is_builtin(entry):
            assert entry.function.__name__ in evaluators.__all__, entry.name
        else:
            assert entry.function.__module__.startswith("eval_examples."), entry.name
            assert f"`{entry.name}`" not in registry.reference(), entry.name
    for name in evaluators.__all__:
        assert hasattr(evaluators, name), name
    assert registry.RUN["avg_order_correctness"].kind == "run"


def test_a_declaration_says_what_it_scores_and_names_one_evaluator():
    with pytest.raises(ValueError, match="say what it scores in a docstring"):
        registry.register(evaluator(lambda **kw: 1.0), name="silent")
    assert registry.register(evaluators.no_error) is evaluators.no_error  # imported again

    @evaluator(name="no_error")
    def impostor(**kwargs) -> float:
        """Always 1.0."""
        return 1.0

    with pytest.raises(ValueError, match=r"two item evaluators are named 'no_error': "
                       r"eval_pipeline.evaluators.traces.no_error and .*impostor"):  # fmt: skip
        registry.register(impostor)
    assert "silent" not in registry.ITEM
    assert registry.ITEM["no_error"].function is evaluators.no_error


def test_an_evaluator_added_in_one_file_runs_in_a_suite(forget_toys, tmp_path, monkeypatch):
    project = copy_project(tmp_path)
    with_plugin(project, TOY)
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
    toy = registry.ITEM["item_count_matches"]
    assert toy.fields.reads == ("expected_output.expected_items",)
    assert "`item_count_matches`" not in registry.reference()  # the docs list built-in ones


def test_a_plugin_that_fails_to_import_is_a_project_error(tmp_path, monkeypatch):
    project = copy_project(tmp_path)
    (project.parent / "broken_plugin.py").write_text("import os\nos.environ['NEEDED']\n")
    text = project.read_text().replace(
        "plugins: [eval_examples]", "plugins: [eval_examples, broken_plugin, absent]"
    )
    project.write_text(text)
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    result = CliRunner().invoke(main, ["run", "--suite", "drive_thru"], terminal_width=400)
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "field 'plugins': importing 'broken_plugin' raised KeyError: 'NEEDED'" in text
    assert "broken_plugin.py:2" in text
    assert "field 'plugins': 'absent': no such module" in text


def test_an_agent_kind_added_in_one_file_runs_a_suite(forget_toys, tmp_path, monkeypatch):
    project = copy_project(tmp_path)
    with_plugin(project, TOY_KIND)
    text = project.read_text()
    graph = ("      graph: eval_examples.drive_thru.graph:build\n"
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
    graph = "      graph: eval_examples.drive_thru.graph:build\n"
    project.write_text(text.replace(graph, "      http: http://127.0.0.1:9/agent\n", 1))
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    result = CliRunner().invoke(main, ["run", "--suite", "drive_thru"], terminal_width=400)
    text = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "field 'agent.input_map': unknown field; it is a field of graph agents" in text
    assert "field 'agent.state_fields': unknown field; it is a field of graph agents" in text


def test_a_boolean_evaluator_gives_0_or_1_and_says_so():
    @evaluator(data_type="BOOLEAN")
    def passes(*, output, **kwargs) -> float:
        """1.0 when the output says pass."""
        return {"pass": 1.0, "fail": 0.0}.get(output, 0.5)

    assert passes(output="pass").data_type == "BOOLEAN" and passes(output="pass").value == 1.0
    with pytest.raises(TypeError, match=r"'passes' is declared BOOLEAN and returned 0\.5"):
        passes(output="maybe")
    assert evaluators.correctness(output={}, expected_output={"expected_tools": []}
                                  ).data_type == "NUMERIC"  # fmt: skip
    assert registry.ITEM["no_error"].data_type == "BOOLEAN"
    assert "| `no_error` | item | BOOLEAN |" in registry.reference()


TOY_CHECK = Path(__file__).parents[1] / "toys" / "changed_outputs_check.py"


@pytest.fixture
def forget_toy_check():
    yield
    checks.REGISTRY.pop("changed_outputs", None)
    sys.modules.pop(TOY_CHECK.stem, None)


def test_a_gate_check_added_in_one_file_shows_in_the_report_the_file_and_dagster(
    forget_toy_check, tmp_path, monkeypatch
):
    """The gate loops over the registry: a check a plugin registers runs in every gate, and
    its blocking flag and description are read from it by the verdict, the results file
    and Dagster's checks alike."""
    from dagster import instance_for_test, materialize

    from eval_pipeline.defs.evaluation.assets import build_evaluation_assets
    from eval_pipeline.defs.partitions import build_partitions
    from eval_pipeline_tests.helpers import SUITE_NAMES, eval_resources

    project = copy_project(tmp_path)
    with_plugin(project, TOY_CHECK)
    clean_cli_env(monkeypatch, tmp_path, project)  # the store Dagster's resources use too
    runner = CliRunner()
    assert runner.invoke(main, ["run", "--suite", "drive_thru"]).exit_code == 0
    out = tmp_path / "r.json"
    ran = runner.invoke(main, ["run", "--suite", "drive_thru", "--prompt-version", "2",
                               "--tier", "smoke", "--json", str(out)],
                        terminal_width=300)  # fmt: skip
    assert ran.exit_code == 1, ran.output
    assert "changed_outputs" in ran.output.splitlines()[-1]  # the verdict names it
    assert "outputs differ from the baseline's" in ran.output  # the report's gate table
    gate = json.loads(out.read_text())["gate"]
    found = next(c for c in gate["checks"] if c["name"] == "changed_outputs")
    assert found["outcome"] == "fail"

    assets = build_evaluation_assets(build_partitions(SUITE_NAMES))
    spec = next(s for s in assets.eval_summary.check_specs if s.name == "changed_outputs")
    # (no check is blocking in Dagster's sense: whether it blocks is the verdict's, and the
    # description's first word, docs/dagster.md)
    assert (spec.description or "").startswith("Blocks.") and "a toy" in spec.description
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        add_partitions(instance, [EvalPartition("drive_thru", "v2")])
        done = materialize(
            [assets.golden_dataset, *assets.evaluation], selection=assets.evaluation,
            partition_key=EvalPartition("drive_thru", "v2").key,
            instance=instance, resources=eval_resources(tmp_path, project=project),
            raise_on_error=False, run_config={"ops": {"agent_run_outputs": {"config": {
                "tier": "smoke", "gate": "fixed"}}}},
        )  # fmt: skip
    evaluated = {c.check_name: c for c in done.get_asset_check_evaluations()}
    assert not evaluated["changed_outputs"].passed
