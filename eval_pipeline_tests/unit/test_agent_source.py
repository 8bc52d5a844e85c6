"""The agent's code that is fingerprinted into its version (the memo key) by default: the
agent's own package, wherever the entry that names it lives. Before, only the entry
module's folder: an entry `my_project.evals.entry:agent` wrapping `memory_agent`'s graph
fingerprinted `my_project/evals/` and never the agent, so an edit of the agent reused
every memoized output; a top-level `entry.py` fingerprinted that one file."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
import yaml

from eval_pipeline.agents.project import load_project

NODES = "def respond(state):\n    return {{'messages': [('ai', {answer!r})]}}\n"
GRAPH = """\
from langgraph.graph import MessagesState, StateGraph

from {agent}.nodes import respond

builder = StateGraph(MessagesState)
builder.add_node("respond", respond)
builder.set_entry_point("respond")
graph = builder.compile()
"""
ENTRIES = {
    # a graph of another package, re-exported by a module deep in the team's project
    "wrapped": ("{project}/evals/entry.py", "from {agent}.graph import graph as agent\n",
                "{project}.evals.entry:agent"),
    # a factory in a top-level module (no package) building the agent package's graph
    "top_level": ("{project}_entry.py",
                  "from {agent} import graph as made\n\n\ndef build(ctx=None):\n"
                  "    return made.builder.compile()\n", "{project}_entry:build"),
}  # fmt: skip


@pytest.fixture
def team(tmp_path, monkeypatch):
    """A repository with the agent's package, the team's project package and an unrelated
    one; unique names, unloaded afterwards."""
    tag = uuid.uuid4().hex[:8]
    names = {"agent": f"agent_{tag}", "project": f"project_{tag}", "other": f"other_{tag}"}
    files = {
        f"{names['agent']}/__init__.py": "",
        f"{names['agent']}/nodes.py": NODES.format(answer="hello"),
        f"{names['agent']}/graph.py": GRAPH.format(**names),
        f"{names['project']}/__init__.py": "",
        f"{names['project']}/evals/__init__.py": "",
        f"{names['other']}/__init__.py": "",
        f"{names['other']}/notes.py": "X = 1\n",
        "evals/support/cases.yaml": yaml.safe_dump([{"id": "c1", "input": {"message": "hi"},
                                                     "expected_output": {"expected_fields": []}}]),
    }  # fmt: skip
    for entry, text, _ in ENTRIES.values():
        files[entry.format(**names)] = text.format(**names)
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    suites = {kind: {"agent": target.format(**names), "dataset": "evals/support",
                     "evaluators": ["completeness"],
                     "thresholds": {"primary_metric": "completeness"}}
              for kind, (_, _, target) in ENTRIES.items()}  # fmt: skip
    (tmp_path / "eval-pipeline.yaml").write_text(yaml.safe_dump({"suites": suites}))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path, names
    for name in [m for m in sys.modules if m.partition(".")[0].startswith(
            (names["agent"], names["project"], names["other"]))]:  # fmt: skip
        del sys.modules[name]


def code_version(root: Path, suite: str) -> str:
    return load_project(root / "eval-pipeline.yaml").suite(suite).code_version


@pytest.mark.parametrize("kind", sorted(ENTRIES))
def test_the_fingerprint_covers_the_agents_package_wherever_the_entry_is(team, kind):
    root, names = team
    before = code_version(root, kind)
    (root / names["other"] / "notes.py").write_text("X = 2\n")  # not the agent's code
    assert code_version(root, kind) == before
    (root / names["agent"] / "nodes.py").write_text(NODES.format(answer="hello there"))
    assert code_version(root, kind) != before
