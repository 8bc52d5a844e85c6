"""Variance-aware repeats of the sequential gate: once the suite's cases left look too few
to decide, each further case its baseline found flaky (the baseline's repeats disagree)
runs ``max_repeats`` times, the others once; the report names them. The choice is the
baseline's, made before the case runs: the per-case means stay unbiased and the gate's
error rates stay at α (simulated below), where repeating by the candidate's own answers
does not. A team's project in a directory of its own, as in test_bisect.py."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from eval_pipeline import settings
from eval_pipeline.core.scoring.sequential import Decision
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import ROOT, clean_cli_env
from eval_pipeline_tests.integration.test_bisect import cli, write_project

# The adder of test_bisect.py, made flaky: on every third case its answer is wrong on some
# repeats (a coin seeded by the case and the repeat), whatever its prompt says.
FLAKY_AGENT = """
import hashlib

from langchain_core.messages import HumanMessage, SystemMessage


def answer(input, ctx):
    prompt = ctx.system_prompt()
    ctx.model.invoke([SystemMessage(prompt), HumanMessage(input["message"])],
                     config={"callbacks": list(ctx.callbacks)})
    a, b = input["a"], input["b"]
    coin = hashlib.sha256(f"{a}:{ctx.repeat}".encode()).digest()[0] % 2
    wrong = a % 3 == 0 and coin == 1
    return {"response": f"The sum is {a + b + (1 if wrong else 0)}."}
"""


def flaky(a: int) -> bool:
    return a % 3 == 0 and len({hashlib.sha256(f"{a}:{r}".encode()).digest()[0] % 2
                               for r in range(3)}) > 1  # fmt: skip


@pytest.fixture
def team(tmp_path, monkeypatch) -> Path:
    """The team's project (60 cases, 5 in the smoke tier, margin 0.1) with the flaky
    adder; the working directory, with a fresh results store."""
    root = tmp_path / "team"
    for name in [m for m in sys.modules if m == "adder" or m.startswith("adder.")]:
        del sys.modules[name]  # test_bisect.py's adder, if this process imported it first
    project = write_project(root, {1: "Add the two numbers.", 2: "Add the two numbers exactly."})
    (root / "adder" / "agent.py").write_text(FLAKY_AGENT)
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    monkeypatch.delenv("EVAL_PROJECT")
    monkeypatch.chdir(root)
    return root


def run(*args: str):
    return cli("run", "--suite", "adder", *args)


def outputs_per_case(run_id: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for o in ResultsStore(settings.results_url()).read_outputs(run_id):
        counts[o.item_id] = counts.get(o.item_id, 0) + 1
    return counts


def test_flaky_cases_run_as_often_as_the_baseline_once_the_suite_runs_short(team, tmp_path):
    """A margin of 0.04 needs 86 pairs even if none differ: the 60 cases run short, so
    each case drawn from then on that the baseline (3 repeats) found flaky runs 3 times,
    the others once; the report, the JSON and the store agree, and the gate's pairs are
    the per-case means (one per case)."""
    assert run("--prompt-version", "1", "--repeat", "3").exit_code == 0
    out = tmp_path / "candidate.json"
    done = run("--prompt-version", "2", "--tier", "smoke", "--margin", "0.04", "--json", str(out))
    assert done.exit_code in (0, 3), done.output
    body = json.loads(out.read_text())
    repeated = body["repeated_cases"]
    assert repeated and all(flaky(int(case.removeprefix("add-"))) for case in repeated)
    smoke = {f"add-{i:02d}" for i in range(5)}
    assert not smoke & set(repeated)  # the tier ran before the run could look short
    counts = outputs_per_case(body["run"]["run_id"])
    assert {c: n for c, n in counts.items() if n > 1} == {c: 3 for c in repeated}
    shown = " ".join(done.output.split())
    assert f"{len(repeated)} flaky ones up to 3 times each ({len(counts) + 2 * len(repeated)} " \
           "model calls)" in body["sequential"]  # fmt: skip
    listed = ", ".join(repeated[:10]) + (f" and {len(repeated) - 10} more" if len(repeated) > 10
                                         else "")  # fmt: skip
    assert f"flaky in the baseline, run up to 3 times each: {listed}" in shown
    assert body["summary"]["repeats"] == 1  # the run's repeats, not the most a case had
    paired = next(c for c in body["gate"]["checks"] if c["name"] == "paired_gate")
    # one pair per case, not per repeat (the cases of the draw up to the decision: how far
    # that is follows the draw, which follows the agent's fingerprint, installed packages
    # included)
    assert paired["rows"][0]["n"] <= len(counts) < sum(counts.values())

    never = run("--prompt-version", "2", "--tier", "smoke", "--margin", "0.04",
                "--max-repeats", "1", "--cache", "off")  # fmt: skip
    assert "flaky ones" not in never.output and "flaky in the baseline" not in never.output


def test_no_case_is_repeated_when_the_baseline_cannot_say_which_are_flaky(team):
    """A baseline that ran each case once says nothing about flakiness: no repeats, and an
    undecided run says why."""
    assert run("--prompt-version", "1").exit_code == 0
    done = run("--prompt-version", "2", "--tier", "smoke", "--margin", "0.03")
    assert done.exit_code == 3, done.output
    shown = " ".join(done.output.split())
    assert "no case repeated: the baseline ran each case once: nothing says which cases " \
           "are flaky" in shown  # fmt: skip
    assert set(outputs_per_case(run_id_of(done.output)).values()) == {1}


def test_a_run_with_the_baselines_repeats_repeats_nothing_more_and_says_so(team):
    assert run("--prompt-version", "1", "--repeat", "3").exit_code == 0
    done = run("--prompt-version", "2", "--tier", "smoke", "--repeat", "3", "--margin", "0.03")
    assert done.exit_code == 3, done.output
    assert (
        "no case repeated: the run gives each case as many answers as the baseline did "
        "(3); --max-repeats above that repeats its flaky cases" in " ".join(done.output.split())
    )
    assert set(outputs_per_case(run_id_of(done.output)).values()) == {3}


def test_a_budget_that_stops_the_repeats_lists_only_the_cases_repeated(team, tmp_path):
    """One item at a time, a few calls fewer than the run takes (the last calls are the
    flaky cases' repeats): the report names the flaky cases that did get more answers,
    and no other."""
    assert run("--prompt-version", "1", "--repeat", "3").exit_code == 0
    out = tmp_path / "candidate.json"
    args = ("--prompt-version", "2", "--tier", "smoke", "--margin", "0.04", "--concurrency",
            "1", "--cache", "off", "--json", str(out))  # fmt: skip
    assert run(*args).exit_code in (0, 3)
    unlimited = json.loads(out.read_text())
    assert unlimited["repeated_cases"]  # (the run's last calls are repeats)
    budget = unlimited["sequential_run"]["model_calls"] - 4
    done = run(*args, "--max-calls", str(budget))
    body = json.loads(out.read_text())
    assert body["run"]["stopped"].startswith(f"--max-calls {budget} reached"), done.output
    counts = outputs_per_case(body["run"]["run_id"])
    assert set(body["repeated_cases"]) == {c for c, n in counts.items() if n > 1}


def run_id_of(output: str) -> str:
    return output.split("(run ")[-1].split(")")[0]


@pytest.mark.parametrize(
    "args, said",
    [
        (["--repeat", "3", "--max-repeats", "2"],
         "max_repeats=2: it must be at least the run's repeats per case (3)"),
        (["--gate", "fixed", "--max-repeats", "3"],
         "max_repeats=3: flaky cases are repeated by the sequential gate: drop --gate fixed"),
        (["--max-repeats", "0"], "--max-repeats"),
    ],
)  # fmt: skip
def test_max_repeats_that_cannot_be_used_is_refused_naming_the_value(team, args, said):
    done = run("--prompt-version", "2", *args)
    assert done.exit_code == 2, done.output
    assert said in " ".join(done.output.split())


def test_max_repeats_needs_per_case_means(team):
    thresholds = team / "evals" / "adder" / "thresholds.yaml"
    body = yaml.safe_load(thresholds.read_text())
    body["regression"]["reducer"] = "pass_at_k"
    thresholds.write_text(yaml.safe_dump(body))
    done = run("--prompt-version", "2", "--max-repeats", "3")
    assert done.exit_code == 2, done.output
    assert "suite adder reduces repeats by 'pass_at_k', which measures a case with more " \
           "repeats differently" in " ".join(done.output.split())  # fmt: skip


RUNS = 300


def bench_module():
    """benchmarks/repeats.py: its simulation, run here to check error rates."""
    spec = importlib.util.spec_from_file_location(
        "repeats_bench", ROOT / "benchmarks" / "repeats.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_repeats_chosen_by_the_baseline_keep_the_error_at_alpha_and_the_candidates_own_do_not():
    """At Δ = −margin a NOT WORSE is wrong. Choosing the cases to repeat by the baseline
    (benchmarks/repeats.py, "baseline flaky": the rule of ``Repeats`` and ``runs_short``)
    keeps that at most α (300 runs: Monte-Carlo s.e. 1.3 points; each rate is held to
    α + 3 s.e.); choosing by the candidate's own failures lifts its per-case means and
    says NOT WORSE far more often: the bias this design avoids."""
    bench = bench_module()
    rng = np.random.default_rng(11)

    def wrong(policy: str, runs: int) -> float:
        said = [bench.simulate(rng, policy, cases=100, margin=0.1, drop=0.1)[0]
                for _ in range(runs)]  # fmt: skip
        return said.count(Decision.NOT_WORSE) / runs

    alpha = bench.ALPHA
    ours, theirs = wrong("baseline flaky", RUNS), wrong("candidate failed", RUNS)
    assert ours <= alpha + 3 * (alpha * (1 - alpha) / RUNS) ** 0.5, f"ours: {ours:.3f}"
    assert theirs > alpha + 3 * (alpha * (1 - alpha) / RUNS) ** 0.5, f"{theirs:.3f}"
