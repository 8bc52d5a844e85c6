"""The verdict path where it went wrong around sound statistics (issue 44), each checked
from outside: a team's project in a directory of its own (a callable agent that adds two
numbers, its prompt versions right or wrong on chosen cases), run through the CLI.

- a sentence explaining an undecided metric crashed the run (ERROR, exit 2) at a pass
  rate of 2/3; nothing that explains a verdict may change it;
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline_tests.helpers import clean_cli_env, write_team_project

# wrong(a) per prompt: the prompt's first word picks which cases the agent gets wrong.
AGENT = """
from langchain_core.messages import HumanMessage, SystemMessage

RULES = {
    "thirds": lambda a: a % 3 == 0,
    "shifted": lambda a: a % 3 == 1,
}


def answer(input, ctx):
    prompt = ctx.system_prompt()
    ctx.model.invoke([SystemMessage(prompt), HumanMessage(input["message"])],
                     config={"callbacks": list(ctx.callbacks)})
    a, b = input["a"], input["b"]
    wrong = RULES[prompt.split(",")[0]](a)
    return {"response": "The sum is " + str(a + b + (1 if wrong else 0)) + "."}
"""


def write_project(root: Path, size: int, versions: dict[int, str], **regression) -> Path:
    cases = [
        {"id": f"sum-{i:03d}", "input": {"message": f"{i} + {2 * i}?", "a": i, "b": 2 * i},
         "expected_output": {"expected_fields": [str(3 * i)]},
         "metadata": {"category": "sum", "difficulty": "easy",
                      "tier": "smoke" if i < 10 else "full"}}
        for i in range(size)
    ]  # fmt: skip
    thresholds = {"primary_metric": "completeness",
                  "regression": {"margin": 0.1, "pass_threshold": 1.0, **regression}}  # fmt: skip
    return write_team_project(root, "summing", AGENT, cases, thresholds, versions)


@pytest.fixture
def team(tmp_path, monkeypatch):
    def make(size: int, versions: dict[int, str], **regression) -> Path:
        root = tmp_path / "team"
        write_project(root, size, versions, **regression)
        clean_cli_env(monkeypatch, tmp_path / "home", root / "eval-pipeline.yaml")
        monkeypatch.delenv("EVAL_PROJECT")
        monkeypatch.chdir(root)
        return root

    yield make
    for name in [m for m in sys.modules if m == "summing" or m.startswith("summing.")]:
        del sys.modules[name]


def run(*args: str):
    return CliRunner().invoke(main, ["run", "--suite", "summing", *args], terminal_width=300)


def last_line(done) -> str:
    return done.output.strip().splitlines()[-1]


def test_a_pass_rate_of_two_thirds_gives_a_verdict_not_a_crash(team):
    """Production passes 2 cases in 3; the candidate passes the third it failed and fails
    another: undecided after all 30 pairs. Saying what those pairs established computed
    the drop the suite would catch at a churn of round(1/3, 2) = 0.33, which exceeds
    1 − 0.67 = 0.32999999999999996: ValueError, and the run was an ERROR (exit 2)."""
    team(30, {1: "thirds, add the two numbers.", 2: "shifted, add the two numbers."})
    first = run("--prompt-version", "1")
    assert first.exit_code == 0, first.output
    done = run("--prompt-version", "2", "--baseline", "production")
    assert done.exit_code == 3, done.output
    assert last_line(done).startswith("VERDICT: UNDECIDED")
    text = " ".join(done.output.split())
    assert "10 better, 10 tied" in text, text
    assert "could not be composed" not in text


def test_an_explanation_that_fails_or_meddles_leaves_the_check_as_decided():
    """A check's explanation (a project's plugin may register one) that raises, or that
    changes what the check decided, is set aside with a line saying so."""
    from eval_pipeline.core.scoring.checks import GateCheck
    from eval_pipeline.core.scoring.gate import explain_safely

    check = GateCheck("paired_gate", "warn", "undecided")

    def raises(check, inputs):
        raise ValueError("base_rate=0.67, flip=0.33")

    def meddles(check, inputs):
        return GateCheck(check.name, "pass", "explained")

    for explain in (raises, meddles):
        told = explain_safely(explain, check, None)
        assert told.outcome == "warn"
        assert told.description.startswith("undecided; paired_gate's explanation could not "
                                           "be composed (ValueError: ")  # fmt: skip

