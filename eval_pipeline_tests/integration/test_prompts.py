"""The local prompt registry and `eval-pipeline prompts list|show|label|add`."""

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline.core.prompts.labels import PromptError
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry
from eval_pipeline_tests.helpers import ROOT

EXAMPLES = ROOT / "examples"
NAME = "drive-thru/orchestrator"


@pytest.fixture
def prompts_dir(tmp_path, monkeypatch):
    shutil.copytree(EXAMPLES / "prompts", tmp_path / "prompts")
    monkeypatch.setenv("EVAL_PROMPTS_DIR", str(tmp_path / "prompts"))
    monkeypatch.setenv("EVAL_PROJECT", str(EXAMPLES / "eval-pipeline.yaml"))
    return tmp_path / "prompts"


def invoke(*args):
    return CliRunner().invoke(main, ["prompts", *args], catch_exceptions=False)


def test_list_and_show(prompts_dir):
    listed = invoke("list")
    assert listed.exit_code == 0 and NAME in listed.output and "production → v1" in listed.output
    shown = invoke("show", NAME, "--label", "staging")
    assert shown.exit_code == 0 and "v2" in shown.output and "{{menu}}" in shown.output


def test_add_then_label_moves_the_label(prompts_dir, tmp_path):
    source = tmp_path / "new.txt"
    source.write_text("Always call lookup_menu_item before add_item_to_order.\n{{menu}}")
    added = invoke("add", NAME, str(source))
    assert added.exit_code == 0 and "added v3" in added.output
    registry = LocalPromptRegistry(prompts_dir)
    assert registry.get(NAME, 3).type == "text"
    labelled = invoke("label", NAME, "3", "production")
    assert labelled.exit_code == 0 and "moved from v1" in labelled.output
    assert registry.labels(NAME) == {"production": 3, "staging": 2}
    assert registry.get_by_label(NAME, "production").version == 3
    assert yaml.safe_load((prompts_dir / "labels.yaml").read_text())[NAME]["production"] == 3


def test_bad_input_exits_2_and_writes_nothing(prompts_dir, tmp_path):
    before = sorted(p.name for p in (prompts_dir / NAME).iterdir())
    bad = tmp_path / "bad.yaml"
    bad.write_text("type: chat\nprompt: just a string\n")
    result = invoke("add", NAME, str(bad))
    assert result.exit_code == 2 and "field 'prompt'" in result.output
    assert sorted(p.name for p in (prompts_dir / NAME).iterdir()) == before
    labels = (prompts_dir / "labels.yaml").read_text()
    assert invoke("label", NAME, "9", "production").exit_code == 2
    assert invoke("label", NAME, "1", "bad label!").exit_code == 2
    assert (prompts_dir / "labels.yaml").read_text() == labels
    assert invoke("show", NAME, "--label", "canary").exit_code == 2
    good = tmp_path / "good.txt"
    good.write_text("A fine prompt.")
    for label in ("bad label!", "latest", "Production", "x" * 37):  # Langfuse refuses these
        refused = invoke("add", NAME, str(good), "--label", label)
        assert refused.exit_code == 2 and repr(label) in refused.output, refused.output
    placeholder = tmp_path / "placeholder.yaml"
    for content in ("{{history}} and more", "[1, 2]"):
        placeholder.write_text(f"type: chat\nprompt:\n- role: placeholder\n  content: {content}\n")
        assert invoke("add", NAME, str(placeholder)).exit_code == 2
    assert sorted(p.name for p in (prompts_dir / NAME).iterdir()) == before  # no version
    assert (prompts_dir / "labels.yaml").read_text() == labels


def test_add_with_a_label_points_it_at_the_new_version(prompts_dir, tmp_path):
    source = tmp_path / "new.txt"
    source.write_text("Always call lookup_menu_item before add_item_to_order.\n{{menu}}")
    added = invoke("add", NAME, str(source), "--label", "staging")
    assert added.exit_code == 0 and "added v3" in added.output and "labelled staging" in (
        added.output
    )  # fmt: skip
    assert LocalPromptRegistry(prompts_dir).labels(NAME) == {"production": 1, "staging": 3}


def test_malformed_version_file_names_the_file(prompts_dir):
    (prompts_dir / NAME / "v1.yaml").write_text("prompt: [unclosed\n")
    with pytest.raises(PromptError, match=r"v1\.yaml"):
        LocalPromptRegistry(prompts_dir).get(NAME, 1)


@pytest.mark.parametrize("name", ["../../../escaped", "/tmp/absolute", "a/../../b", "a//b", "."])
def test_a_prompt_name_cannot_leave_the_registry(prompts_dir, tmp_path, name):
    """`prompts add ../../../escaped new.txt` wrote escaped/v1.yaml three folders above the
    registry (exit 0); an absolute name too. Now: exit 2, naming the name, nothing written."""
    source = tmp_path / "new.txt"
    source.write_text("A prompt.")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    done = invoke("add", name, str(source))
    assert done.exit_code == 2, done.output
    assert f"prompt name {name!r}" in " ".join(done.output.split())
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert not Path("/tmp/absolute").exists()


def test_with_langfuse_configured_the_commands_use_its_registry(prompts_dir, tmp_path,
                                                                 monkeypatch):  # fmt: skip
    """Runs read prompts from Langfuse when LANGFUSE_* is set, but `prompts list|show|label
    |add` read and wrote the local prompts/ folder: `show --label staging` answered a
    version the run would not evaluate. Now they go to Langfuse and leave the folder alone."""
    from eval_pipeline_tests.langfuse_server import LangfuseTestServer

    local = sorted(str(p) for p in prompts_dir.rglob("*"))
    source = tmp_path / "chat.yaml"
    source.write_text(yaml.safe_dump({
        "type": "chat", "config": {"temperature": 0},
        "prompt": [{"role": "system", "content": "Take the order. {{menu}}"},
                   {"role": "placeholder", "content": "{{history}}"}],
    }))  # fmt: skip
    with LangfuseTestServer() as server:
        for var, value in server.env().items():
            monkeypatch.setenv(var, value)
        added = invoke("add", NAME, str(source), "--label", "staging")
        assert added.exit_code == 0 and "added v1" in added.output, added.output
        assert invoke("add", NAME, str(source)).exit_code == 0  # v2, unlabelled
        assert "set" in invoke("label", NAME, "1", "production").output
        moved = invoke("label", NAME, "2", "production")
        assert moved.exit_code == 0 and "moved from v1" in moved.output, moved.output
        listed = " ".join(invoke("list").output.split())
        assert server.base_url in listed and NAME in listed, listed
        assert "production → v2" in listed and "staging → v1" in listed, listed
        shown = invoke("show", NAME, "--label", "staging")
        assert shown.exit_code == 0 and f"{NAME} v1" in shown.output, shown.output
        assert "Take the order. {{menu}}" in shown.output
        stored = server.state.prompts[NAME][0]
        assert stored["prompt"][1] == {"type": "placeholder", "name": "history"}
        assert stored["config"] == {"temperature": 0}
        missing = invoke("label", NAME, "9", "production")
        assert missing.exit_code == 2 and "version 9" in missing.output, missing.output
        again = invoke("label", NAME, "2", "production")
        assert again.exit_code == 0 and "already there" in again.output, again.output
        # Refused before anything is sent: before, `add --label latest` stored a version
        # and then failed on the label (HTTP 400, "retry later")
        for label in ("latest", "Production"):
            refused = invoke("add", NAME, str(source), "--label", label)
            assert refused.exit_code == 2 and repr(label) in refused.output, refused.output
            assert invoke("label", NAME, "1", label).exit_code == 2
        assert len(server.state.prompts[NAME]) == 2
        # The double refuses such a label as the real server does (a 400 naming it)
        from langfuse.api.core.api_error import ApiError

        with pytest.raises(ApiError) as refused_by_server:
            server.client().create_prompt(name="other", prompt="x", labels=["Production"])
        assert refused_by_server.value.status_code == 400
        assert refused_by_server.value.body["error"][0]["path"] == ["labels", 0]
        assert [e["labels"] for e in server.state.prompts[NAME]] == [
            ["staging"], ["latest", "production"]
        ]  # fmt: skip
    assert sorted(str(p) for p in prompts_dir.rglob("*")) == local
