"""How a worse agent could get exit 0, each path closed and checked from outside: a team's
project in a directory of its own (a callable agent that adds two numbers, its prompt
versions right or wrong on chosen cases), run through the CLI as CI runs it.

- a prompt tuned on the smoke tier, worse over the suite;
- a provider outage whose ERROR run would become the next baseline;
- a misspelt metric in the thresholds, which would gate nothing;
- a baseline on another dataset, "not comparable", which is an ERROR, not a verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import in_team_project, write_team_project

CASES, SMOKE = 200, 20
# v1 (production) is wrong on every other smoke case; v2 was tuned on the smoke cases: right
# on all of them, wrong on one in four of the others (0.175 worse over the suite); v3 is
# wrong on half of every case.
AGENT = """
from langchain_core.messages import HumanMessage, SystemMessage

SMOKE = {smoke}


def answer(input, ctx):
    prompt = ctx.system_prompt()
    ctx.model.invoke([SystemMessage(prompt), HumanMessage(input["message"])],
                     config={"callbacks": list(ctx.callbacks)})
    a, b = input["a"], input["b"]
    if "tuned" in prompt:
        wrong = a >= SMOKE and a % 4 == 1
    elif "roughly" in prompt:
        wrong = a % 2 == 0
    else:
        wrong = a < SMOKE and a % 2 == 0
    return {"response": "The sum is " + str(a + b + (1 if wrong else 0)) + "."}
""".replace("{smoke}", str(SMOKE))
VERSIONS = {1: "Add the two numbers.", 2: "Add the two numbers, tuned.",
            3: "Add the two numbers roughly."}  # fmt: skip


def write_project(root: Path) -> Path:
    cases = [
        {"id": f"sum-{i:03d}", "input": {"message": f"{i} + {2 * i}?", "a": i, "b": 2 * i},
         "expected_output": {"expected_fields": [str(3 * i)]},
         "metadata": {"category": "sum", "difficulty": "easy",
                      "tier": "smoke" if i < SMOKE else "full"}}
        for i in range(CASES)
    ]  # fmt: skip
    thresholds = {"primary_metric": "completeness", "min_mean": {"completeness": 0.5},
                  "regression": {"margin": 0.1, "pass_threshold": 1.0}}  # fmt: skip
    return write_team_project(root, "summing", AGENT, cases, thresholds, VERSIONS)


@pytest.fixture
def team(tmp_path, monkeypatch) -> Iterator[Path]:
    project = write_project(tmp_path / "team")
    with in_team_project(tmp_path, monkeypatch, project, "summing") as root:
        yield root


def run(*args: str):
    return CliRunner().invoke(main, ["run", "--suite", "summing", *args], terminal_width=300)


def last_line(done) -> str:
    return done.output.strip().splitlines()[-1]


def test_a_prompt_tuned_on_the_smoke_tier_does_not_pass(team):
    """v2 is right on the 20 smoke cases (production got 10) and wrong on one in four of
    the others. Gated as the label sensor gates staging (--tier smoke), the smoke tier ran
    first and carried the decision: VERDICT: PASS. Now the gate decides on the pairs of its
    seeded draw only, so the tier counts where the draw reaches it."""
    assert run("--prompt-version", "1").exit_code == 0
    tuned = run("--prompt-version", "2", "--tier", "smoke", "--baseline", "production")
    assert tuned.exit_code in (1, 3), tuned.output
    assert "PASS" not in last_line(tuned)


def test_an_outage_never_becomes_the_next_baseline(team, monkeypatch):
    """Every item fails on the provider: ERROR (exit 2), stored as an error, not complete;
    the next candidate, wrong on half the cases, is gated against the last run that
    measured the agent (it was gated against the outage's zeros: PASS, Δ +1.000)."""
    assert run("--prompt-version", "1").exit_code == 0
    with monkeypatch.context() as down:
        for name, value in (("EVAL_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
                            ("EVAL_LLM_API_KEY", "sk-down"), ("EVAL_LLM_MAX_RETRIES", "0"),
                            ("EVAL_LLM_CHECK_MODEL", "0"), ("EVAL_LLM_MODEL", "m")):  # fmt: skip
            down.setenv(name, value)
        outage = run("--prompt-version", "1")
    assert outage.exit_code == 2, outage.output
    outage_id = outage.output.split("(run ")[-1].split(")")[0]
    from eval_pipeline import settings

    assert ResultsStore(settings.results_url()).get_run(outage_id).status == "error"
    worse = run("--prompt-version", "3", "--baseline", "production")
    assert worse.exit_code == 1, worse.output
    assert "FAIL" in last_line(worse)
    named = run("--prompt-version", "3", "--baseline-run", outage_id)
    assert named.exit_code == 2
    assert f"baseline run {outage_id} is error" in " ".join(named.output.split())


@pytest.mark.parametrize(
    ("thresholds", "field", "value"),
    [
        ({"primary_metric": "completenes"}, "primary_metric", "completenes"),
        ({"primary_metric": "completeness", "regression": {"metrics": ["nosuch"]}},
         "regression.metrics", "nosuch"),
        ({"primary_metric": "completeness", "min_mean": {"completenes": 0.5}},
         "min_mean", "completenes"),
    ],
)  # fmt: skip
def test_a_misspelt_metric_is_a_configuration_error(team, thresholds, field, value):
    """A gated metric nobody scores gave pairs of 0 − 0 (NOT WORSE: PASS), a floor on one a
    "regression" (FAIL, exit 1): exit 2 now, naming the file, the field and the value,
    before anything runs."""
    (team / "evals" / "summing" / "thresholds.yaml").write_text(yaml.safe_dump(thresholds))
    done = run("--prompt-version", "1")
    text = " ".join(done.output.split())
    assert done.exit_code == 2, done.output
    assert f"thresholds.yaml: field '{field}': '{value}' is not a metric of the suite" in text
    if value == "completenes":
        assert "did you mean 'completeness'?" in text
    assert "ERROR" in last_line(done)


def test_a_baseline_on_another_dataset_is_an_error_not_a_failure(team):
    """Not comparable (the dataset changed since the baseline ran): the gate cannot tell,
    so the verdict is ERROR, exit 2, as docs/gate.md says (it was FAIL, exit 1: a
    "regression" the agent did not make)."""
    assert run("--prompt-version", "1").exit_code == 0
    cases = team / "evals" / "summing" / "cases.yaml"
    cases.write_text(cases.read_text().replace("0 + 0?", "0 plus 0?"))
    done = run("--prompt-version", "2")
    assert done.exit_code == 2, done.output
    assert "not comparable" in done.output and "ERROR" in last_line(done)
