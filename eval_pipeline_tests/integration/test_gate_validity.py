"""The verdict path where it went wrong around sound statistics (issue 44), each checked
from outside: a team's project in a directory of its own (a callable agent that adds two
numbers, its prompt versions right or wrong on chosen cases), run through the CLI.

- a sentence explaining an undecided metric crashed the run (ERROR, exit 2) at a pass
  rate of 2/3; nothing that explains a verdict may change it;
- a reducer other than the mean moves the margin off the per-answer scale, silently;
- a run that gated nothing said a bare PASS.

(The fixed gate's size: test_fixed_gate_validity.py; a draw per candidate:
test_sequential_validity.py; misspelt labels and names: test_gate_config.py.)
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from eval_pipeline_tests.helpers import benchmark, in_team_project, write_team_project
from eval_pipeline_tests.integration.test_wrong_passes import last_line, run

# wrong(a) per prompt: the prompt's first word picks which cases the agent gets wrong.
AGENT = """
from langchain_core.messages import HumanMessage, SystemMessage

RULES = {
    "thirds": lambda a: a % 3 == 0,
    "shifted": lambda a: a % 3 == 1,
    "never": lambda a: True,
}


def answer(input, ctx):
    prompt = ctx.system_prompt()
    ctx.model.invoke([SystemMessage(prompt), HumanMessage(input["message"])],
                     config={"callbacks": list(ctx.callbacks)})
    a, b = input["a"], input["b"]
    wrong = RULES[prompt.split(",")[0]](a)
    return {"response": "The sum is " + str(a + b + (1 if wrong else 0)) + "."}
"""


def write_project(root: Path, size: int, versions: dict[int, str], floors: bool = False,
                  **regression) -> Path:  # fmt: skip
    cases = [
        {"id": f"sum-{i:03d}", "input": {"message": f"{i} + {2 * i}?", "a": i, "b": 2 * i},
         "expected_output": {"expected_fields": [str(3 * i)]},
         "metadata": {"category": "sum", "difficulty": "easy",
                      "tier": "smoke" if i < 10 else "full"}}
        for i in range(size)
    ]  # fmt: skip
    thresholds = {"primary_metric": "completeness",
                  "regression": {"margin": 0.1, "pass_threshold": 1.0, **regression}}  # fmt: skip
    if floors:
        thresholds["category_floors"] = {"completeness": {"sum": 0.5}}
    return write_team_project(root, "summing", AGENT, cases, thresholds, versions)


@pytest.fixture
def team(tmp_path, monkeypatch):
    with ExitStack() as stack:

        def make(size: int, versions: dict[int, str], **options) -> Path:
            project = write_project(tmp_path / "team", size, versions, **options)
            return stack.enter_context(in_team_project(tmp_path, monkeypatch, project,
                                                       "summing"))  # fmt: skip

        yield make


def test_a_pass_rate_of_two_thirds_gives_a_verdict_not_a_crash(team):
    """Production passes 2 cases in 3; the candidate passes the third it failed and fails
    another: undecided after all 30 pairs (a margin they cannot decide). Saying what those
    pairs established computed
    the drop the suite would catch at a churn of round(1/3, 2) = 0.33, which exceeds
    1 − 0.67 = 0.32999999999999996: ValueError, and the run was an ERROR (exit 2)."""
    team(30, {1: "thirds, add the two numbers.", 2: "shifted, add the two numbers."},
         margin=0.05)  # (finer than 30 pairs can decide, whatever their order)
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



def test_a_reducer_whose_scale_is_not_per_answer_is_said_with_the_verdict(team):
    """pass_all_k over 3 answers: the gate is valid on that scale, and a candidate worse
    by the margin per answer can pass it; the verdict line and the gate's note say which
    scale the margin was on (they said nothing)."""
    team(60, {1: "thirds, add the two numbers.", 2: "thirds, add the two numbers!"},
         reducer="pass_all_k")  # fmt: skip
    first = run("--prompt-version", "1", "--repeat", "3")
    assert first.exit_code == 0, first.output
    done = run("--prompt-version", "2", "--baseline", "production", "--repeat", "3")
    assert done.exit_code == 0, done.output
    assert last_line(done) == ("VERDICT: PASS — not worse by the margin on whether all 3 of "
                               "a case's answers pass, not per answer (exit 0)")  # fmt: skip
    text = " ".join(done.output.split())
    assert ("the margin 0.1 is on whether all 3 of a case's answers pass (reducer "
            "pass_all_k), not per answer") in text  # fmt: skip
    assert "per-answer pass rate of completeness (0.67), a drop of 0.1 per answer is 0.114 " \
           "on this scale" in text, text


@pytest.mark.parametrize(
    ("reducer", "k", "rate", "passed"),
    [("pass_all_k", 5, 0.5, 0.90), ("pass_at_k", 3, 0.7, 0.50), ("max", 5, 0.7, 0.95)],
)
def test_a_drop_of_the_margin_per_answer_can_pass_on_the_reducers_scale(reducer, k, rate,
                                                                        passed):  # fmt: skip
    """The audit's finding, as numbers: a candidate whose every answer passes 0.1 less
    often, over 200 cases of k answers, passes the sequential gate in most runs, because
    on the reducer's scale the drop is smaller than the margin (``per_answer_drop``; max
    on pass/fail scores is pass_at_k). Valid on that scale; hence the note
    (benchmarks/gate_validity.py ``reducer_passes``)."""
    from eval_pipeline.core.scoring.reducers import per_answer_drop

    assert benchmark("gate_validity").reducer_passes(reducer, k, rate, 400, seed=7) >= passed
    assert per_answer_drop("pass_at_k" if reducer == "max" else reducer, k, rate, 0.1) < 0.1


def test_a_run_that_gated_nothing_says_so_with_its_pass(team):
    """Only a warning floor, no baseline yet, the agent wrong on every case: every
    blocking check N/A, and the last line read a bare "VERDICT: PASS (exit 0)". It is a
    PASS (a suite's first run must be able to become its baseline), and says that nothing
    was gated and why; the next run, gated against it, is judged."""
    team(30, {1: "never, add the two numbers.", 2: "thirds, add the two numbers."},
         floors=True)  # fmt: skip
    first = run("--prompt-version", "1")
    assert first.exit_code == 0, first.output
    assert last_line(first) == (
        "VERDICT: PASS — nothing was gated (no baseline yet: no complete full-tier run of "
        "summing production (v1); no blocking threshold is set) (exit 0)")  # fmt: skip
    second = run("--prompt-version", "1")
    assert "nothing was gated" not in last_line(second)
