"""`eval-pipeline bisect`: a team's project in a directory of its own (outside this
repository), an agent whose answers depend on its prompt's words, prompt versions 1–6
where version 4 introduces a drop, and a git history where commit 3 breaks the agent.
Each step is a sequential gate against the good end's full run: the search finds the
version (the commit) that introduced the drop, stops UNDECIDED rather than guess, and
refuses bad input naming the value."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline.core.analysis.bisect import Step, bisect
from eval_pipeline.core.scoring.sequential import decision_times
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import clean_cli_env, write_team_project

CASES = 60
# The agent adds two numbers. "roughly" in its prompt makes it wrong on every even `a`
# (half the cases: a clear drop); "slightly" on a = 2 only, a smoke case (one of 60: a
# drop of 0.017, which 60 cases cannot tell from a margin of 0.03 either way).
AGENT = """
from langchain_core.messages import HumanMessage, SystemMessage


def answer(input, ctx):
    prompt = ctx.system_prompt()
    ctx.model.invoke([SystemMessage(prompt), HumanMessage(input["message"])],
                     config={"callbacks": list(ctx.callbacks)})  # one model call, counted
    a, b = input["a"], input["b"]
    wrong = ("roughly" in prompt and a % 2 == 0) or ("slightly" in prompt and a == 2)
    return {"response": f"The sum is {a + b + (1 if wrong else 0)}."}
"""
VERSIONS = {
    1: "Add the two numbers.",
    2: "Add the two numbers exactly.",
    3: "Add the two numbers exactly, and say so.",
    4: "Add the two numbers roughly.",  # the drop
    5: "Add the two numbers roughly, politely.",
    6: "Add them roughly.",
}


def write_project(root: Path, versions: dict[int, str] = VERSIONS) -> Path:
    """The team's project: its agent package, 60 cases (5 in the smoke tier), the prompt
    versions and thresholds with a 0.1 margin (and a floor of 0.6 the drop falls below)."""
    cases = [
        {"id": f"add-{i:02d}", "input": {"message": f"{i} + {3 * i + 1}?", "a": i, "b": 3 * i + 1},
         "expected_output": {"expected_fields": [str(4 * i + 1)]},
         "metadata": {"category": "sum", "difficulty": "easy",
                      "tier": "smoke" if i < 5 else "full"}}
        for i in range(CASES)
    ]  # fmt: skip
    thresholds = {"primary_metric": "completeness", "min_mean": {"completeness": 0.6},
                  "regression": {"margin": 0.1, "pass_threshold": 1.0}}  # fmt: skip
    return write_team_project(root, "adder", AGENT, cases, thresholds, versions)


@pytest.fixture
def team(tmp_path, monkeypatch) -> Path:
    """The team's project directory, the working directory (the project is found there,
    as a user's is), with a fresh results store."""
    root = tmp_path / "team"
    write_project(root)
    clean_cli_env(monkeypatch, tmp_path / "home", root / "eval-pipeline.yaml")
    monkeypatch.delenv("EVAL_PROJECT")
    monkeypatch.chdir(root)
    return root


def cli(*args: str):
    return CliRunner().invoke(main, list(args), terminal_width=200)


def lines(done) -> list[str]:
    """What bisect printed on stdout (stderr has the progress: "evaluating … …")."""
    return done.stdout.strip().splitlines()


def test_bisect_finds_the_version_that_introduced_the_drop(team):
    out = team / "bisect.json"
    done = cli("bisect", "--suite", "adder", "--good", "1", "--bad", "6", "--json", str(out))
    assert done.exit_code == 0, done.output
    shown = lines(done)
    assert done.stderr.splitlines() == [f"evaluating version {v} …" for v in (1, 6, 3, 4)]
    # the baseline, the bad end checked first, then midpoints: 3 then 4
    assert [line.split(":")[0] for line in shown[:-1]] == [
        "version 1", "version 6", "version 3", "version 4"
    ]  # fmt: skip
    assert shown[0].startswith("version 1: BASELINE; 60 cases, full tier: completeness 1.000")
    assert shown[1].startswith("version 6: WORSE — decided after ")
    assert shown[2].startswith("version 3: NOT WORSE — decided after ")
    assert shown[3].startswith("version 4: WORSE — decided after ")
    assert shown[-1].startswith("first bad: version 4 (last good: version 3) — worse than "
                                "version 1: completeness Δ -0.")  # fmt: skip
    body = json.loads(out.read_text())
    steps = body["steps"]
    assert body["first_bad"] == "version 4" and body["exit_code"] == 0
    assert len(steps) <= math.ceil(math.log2(len(VERSIONS) - 1)) + 1  # the bad end, then log2
    for step in steps:  # each a decision of the gate, stopped as soon as it decided
        cases = int(step["sequential"].split(" after ")[1].split(" of ")[0])
        assert step["sequential"].startswith("decided after ") and 5 <= cases <= CASES
    # every model call counted: one per case the agent ran (its LLM judge: none)
    calls = [body["baseline"]["model_calls"], *(s["model_calls"] for s in steps)]
    assert calls[0] == CASES and all(c > 0 for c in calls)
    assert body["model_calls"] == sum(calls)
    assert shown[-1].endswith(f"; {sum(calls)} model calls spent (3 steps and the baseline)")
    with ResultsStore(f"sqlite:///{team.parent / 'home' / 'results.sqlite'}") as store:
        for step in steps:  # each step gated against the good end's full run
            run = store.get_run(step["run_id"])
            assert run.baseline_run_id == body["baseline"]["run_id"]
            assert run.options.gate == "sequential" and run.tier == "smoke"

    again = cli("bisect", "--suite", "adder", "--good", "1", "--bad", "6", "--json", str(out))
    assert again.exit_code == 0, again.output
    assert lines(again)[-1].startswith("first bad: version 4")
    assert lines(again)[-1].endswith("; 0 model calls spent (3 steps and the baseline)")
    with ResultsStore(f"sqlite:///{team.parent / 'home' / 'results.sqlite'}") as store:
        for step in json.loads(out.read_text())["steps"]:  # the memo answered every item
            notes = store.get_run(step["run_id"]).notes  # (and no agent ran to read a prompt)
            assert not [n for n in notes if "never read the prompt" in n], notes


def test_an_undecided_step_stops_the_search_and_says_what_is_open(team):
    """Version 2's drop (one case of 60) cannot be told from a margin of 0.03 with the
    suite's 60 cases: the search stops there (exit 3) instead of guessing a side."""
    (team / "prompts" / "adder" / "assistant" / "v2.yaml").write_text(
        yaml.safe_dump({"type": "text", "prompt": "Add the two numbers slightly."})
    )
    done = cli("bisect", "--suite", "adder", "--good", "1", "--bad", "4", "--margin", "0.03")
    assert done.exit_code == 3, done.output
    shown = lines(done)
    assert [line.split(":")[0] for line in shown[:-1]] == ["version 1", "version 4", "version 2"]
    assert shown[2].startswith("version 2: UNDECIDED — undecided after 60 of 60 cases")
    assert shown[-1].startswith("UNDECIDED at version 2: the gate could not tell whether it "
                                "is worse than version 1 (completeness Δ -0.017")  # fmt: skip
    assert "the first bad is after version 1, at or before version 4" in shown[-1]


def test_a_bad_end_that_is_not_worse_is_nothing_to_bisect(team):
    done = cli("bisect", "--suite", "adder", "--good", "1", "--bad", "3")
    assert done.exit_code == 2, done.output
    assert lines(done)[-1].startswith(
        "nothing to bisect: version 3 is not worse than version 1 (completeness Δ +0.000"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--suite", "addr", "--good", "1", "--bad", "6"], "no suite 'addr'"),
        (["--suite", "adder", "--good", "4", "--bad", "2"],
         "--good 4 must be an earlier prompt version than --bad 2"),
        (["--suite", "adder", "--good", "1", "--bad", "9"], "has no version 7"),
        (["--suite", "adder", "--good", "1"], "give --good and --bad"),
        (["--suite", "adder", "--good", "1", "--bad", "6", "--commits", "A..B"],
         "give --good and --bad"),
        (["--suite", "adder", "--commits", "HEAD~1..HEAD"], "is not in a git repository"),
        (["--suite", "adder", "--good", "1", "--bad", "6", "--tier", "medium"], "--tier"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_naming_the_value(team, args, said):
    done = cli("bisect", *args)
    assert done.exit_code == 2, done.output
    assert said in " ".join(done.output.split()), done.output


# --- commits --------------------------------------------------------------------------
def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          cwd=root, check=True, capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


@pytest.fixture
def history(tmp_path) -> Path:
    """The team's repository: commits 1–4 of one prompt; commit 3 breaks the agent."""
    root = tmp_path / "repo"
    write_project(root, {1: "Add the two numbers."})
    agent = root / "adder" / "agent.py"
    agent.write_text(AGENT.replace('"roughly" in prompt', '"careless" in __name__'))
    (root / ".gitignore").write_text(".eval_home/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one: the agent")
    (root / "README.md").write_text("Our adder.\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "two: a readme")
    agent.write_text(AGENT.replace('"roughly" in prompt', "True"))  # wrong on every even a
    git(root, "commit", "-qam", "three: breaks the agent")
    (root / "README.md").write_text("Our adder, faster.\n")
    git(root, "commit", "-qam", "four: docs")
    return root


def test_bisect_over_commits_finds_the_commit_that_broke_the_agent(history, tmp_path):
    """Run as a user runs it, in the repository; each commit's agent in a worktree of its
    own, on the checkout's cases (the cases are edited after the last commit: every step
    evaluates these), the worktrees gone afterwards."""
    cases = history / "evals" / "adder" / "cases.yaml"
    cases.write_text(cases.read_text().replace("difficulty: easy", "difficulty: medium"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVAL_", "LANGFUSE_", "OPENAI_", "GITHUB_"))}  # fmt: skip
    env["EVAL_HOME"] = str(tmp_path / "home")
    shas = git(history, "rev-list", "--reverse", "HEAD").split()
    done = subprocess.run(
        [sys.executable, "-m", "eval_pipeline.cli", "bisect", "--suite", "adder",
         "--commits", "HEAD~3..HEAD", "--json", str(tmp_path / "b.json")],
        cwd=history, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    shown = done.stdout.strip().splitlines()
    assert shown[0].startswith(f"commit {shas[0][:10]} (one: the agent): BASELINE; 60 cases")
    assert shown[1].startswith(f"commit {shas[3][:10]} (four: docs): WORSE — decided after")
    assert shown[2].startswith(f"commit {shas[1][:10]} (two: a readme): NOT WORSE")
    assert shown[3].startswith(f"commit {shas[2][:10]} (three: breaks the agent): WORSE")
    assert shown[-1].startswith(f"first bad: commit {shas[2][:10]} (three: breaks the agent)")
    body = json.loads((tmp_path / "b.json").read_text())
    with ResultsStore(f"sqlite:///{tmp_path / 'home' / 'results.sqlite'}") as store:
        runs = [store.get_run(s["run_id"]) for s in [body["baseline"], *body["steps"]]]
    assert [r.code_commit for r in runs] == [shas[0], shas[3], shas[1], shas[2]]
    assert len({r.dataset_version for r in runs}) == 1  # the checkout's cases, every step
    assert git(history, "worktree", "list").count("\n") == 0  # only the checkout itself
    assert git(history, "status", "--porcelain") == "M evals/adder/cases.yaml"


def test_a_commit_range_is_checked_before_anything_runs(history, monkeypatch, tmp_path):
    clean_cli_env(monkeypatch, tmp_path / "home", history / "eval-pipeline.yaml")
    for commits, said in (
        ("HEAD", "give a range A..B"),
        ("nope..HEAD", "'nope' is not a commit"),
        ("HEAD..HEAD~2", "HEAD is not an ancestor of HEAD~2"),
        ("HEAD..HEAD", "no commits between HEAD and HEAD"),
    ):
        done = cli("bisect", "--suite", "adder", "--commits", commits)
        assert done.exit_code == 2, done.output
        assert said in " ".join(done.output.split()), (commits, done.output)
    outside = tmp_path / "elsewhere" / "adder"  # cases no worktree of the repository has
    shutil.copytree(history / "evals" / "adder", outside)
    project = history / "eval-pipeline.yaml"
    project.write_text(project.read_text().replace("dataset: evals/adder", f"dataset: {outside}"))
    done = cli("bisect", "--suite", "adder", "--commits", "HEAD~1..HEAD")
    assert done.exit_code == 2, done.output
    assert "is outside the repository" in " ".join(done.output.split()), done.output


def test_a_failed_threshold_stops_a_sequential_run_unless_it_goes_on_until_decided(team):
    """Version 4 is below its own floor (0.6) after the smoke tier: a sequential run stops
    there (its verdict is FAIL whatever the gate says); with --sequential-until decided it
    goes on until the gate itself decides, as every bisect step does."""
    base = team / "base.json"
    ran = cli("run", "--suite", "adder", "--prompt-version", "1", "--json", str(base))
    assert ran.exit_code == 0, ran.output
    baseline = json.loads(base.read_text())["run"]["run_id"]
    gate = ("run", "--suite", "adder", "--prompt-version", "4", "--tier", "smoke",
            "--gate", "sequential", "--baseline-run", baseline)  # fmt: skip
    stopped = cli(*gate)
    assert stopped.exit_code == 1, stopped.output
    assert "Sequential gate: undecided after 5 of 60 cases" in stopped.output
    assert stopped.output.strip().splitlines()[-1] == "VERDICT: FAIL — min_mean_scores (exit 1)"
    decided = cli(*gate, "--sequential-until", "decided")
    assert decided.exit_code == 1, decided.output
    assert re.search(r"Sequential gate: decided after \d+ of 60 cases", decided.output)
    verdict = decided.output.strip().splitlines()[-1]  # (the floor may hold on more cases)
    assert verdict.startswith("VERDICT: FAIL — ") and "paired_gate" in verdict


def test_without_a_project_file_bisect_says_so(tmp_path, monkeypatch):
    clean_cli_env(monkeypatch, tmp_path / "home")
    monkeypatch.delenv("EVAL_PROJECT")
    monkeypatch.chdir(tmp_path)
    for args in (["--good", "1", "--bad", "2"], ["--commits", "HEAD~1..HEAD"]):
        done = cli("bisect", "--suite", "adder", *args)
        assert done.exit_code == 2, done.output
        assert "eval-pipeline.yaml" in done.output and "Traceback" not in done.output


# --- the search's error rate, by simulation -------------------------------------------
ALPHA, MARGIN, SUITE = 0.05, 0.1, 400


def gate_judgement(x: np.ndarray) -> str:
    """The sequential gate's rule on paired differences in draw order (core/scoring/gate.py
    through decide(): pairs as independent draws): the first decision the test martingales
    reach, WORSE on a tie; looking after each batch only decides when it is seen."""
    t_nw, t_w = (int(t) for t in decision_times(x, margin=MARGIN, alpha_not_worse=ALPHA,
                                                alpha_worse=ALPHA))  # fmt: skip
    if t_w <= SUITE and t_w <= t_nw:
        return "WORSE"
    return "NOT WORSE" if t_nw <= SUITE else "UNDECIDED"


def differences(rng: np.random.Generator, down: int, up: int) -> np.ndarray:
    """A version's paired differences with the good end: ``down`` in every 100 cases it
    fails that the good end passed, ``up`` the other way round."""
    d = np.zeros(SUITE)
    order = rng.permutation(SUITE)
    down, up = down * SUITE // 100, up * SUITE // 100
    d[order[:down]], d[order[down : down + up]] = -1.0, 1.0
    return d


def one_bisection(rng: np.random.Generator, before: tuple[int, int], after: tuple[int, int]):
    """Versions 0–6, the first bad at 3: the search with each step a sequential gate on
    the version's differences in a draw order of its own; (its result, each step's
    judgement with the version's true Δ)."""
    suite = [np.zeros(SUITE)] + [differences(rng, *before) for _ in range(2)]
    suite += [differences(rng, *after) for _ in range(4)]
    claims: list[tuple[str, float]] = []

    def evaluate(i: int) -> Step:
        judged = gate_judgement(suite[i][rng.permutation(SUITE)])
        claims.append((judged, float(suite[i].mean())))
        return Step(f"v{i}", judged, "", "", "", 0)  # type: ignore[arg-type]

    names = [f"v{i}" for i in range(7)]
    return bisect(names, Step("v0", "BASELINE", "", "", "", 0), evaluate), claims


@pytest.mark.parametrize(
    ("before", "after", "right_at_least"),
    [((8, 8), (35, 5), 0.93), ((10, 5), (20, 5), None)],
    ids=["unchanged, then a drop of 0.3", "a drop of 0.05 (within the margin), then 0.15"],
)
def test_every_claim_of_a_bisection_holds_but_at_most_alpha_per_step(before, after, right_at_least):
    """A step's claim is WORSE (the suite's Δ < 0) or NOT WORSE (Δ > −margin); runs with
    any false claim are at most (steps)·α of the runs — the search adds no error of its
    own — and where the drop is clear the first bad is found nearly every time. A drop
    smaller than the margin may be called either way: the margin is the gate's
    indifference zone."""
    rng = np.random.default_rng(2025)
    runs, false_claims, right = 400, 0, 0
    for _ in range(runs):
        found, claims = one_bisection(rng, before, after)
        assert len(claims) <= 4  # the bad end and at most ⌈log2 6⌉ midpoints
        false_claims += any((j == "WORSE" and d >= 0) or (j == "NOT WORSE" and d <= -MARGIN)
                            for j, d in claims)  # fmt: skip
        right += found.outcome == "found" and found.bad == 3
    slack = 3 * np.sqrt(4 * ALPHA / runs)
    assert false_claims / runs <= 4 * ALPHA + slack, false_claims / runs
    if right_at_least is not None:
        assert right / runs >= right_at_least, right / runs


@pytest.mark.parametrize(
    ("baseline", "script", "outcome", "evaluated", "said"),
    [
        ("BASELINE", {4: "UNDECIDED"}, "undecided", [4],
         "UNDECIDED at v4: the gate could not tell whether it is worse than v0 (why); "
         "nothing was bisected (v4 not found worse)"),
        ("BASELINE", {4: "WORSE", 2: "ERROR"}, "error", [4, 2],
         "ERROR at v2: why; the first bad is after v0, at or before v4"),
        ("BASELINE", {4: "WORSE", 2: "NOT WORSE", 3: "UNDECIDED"}, "undecided", [4, 2, 3],
         "the first bad is after v2, at or before v4"),
        ("ERROR", {}, "error", [], "ERROR at v0: why; nothing was bisected"),
        ("BASELINE", {4: "WORSE", 2: "WORSE", 1: "WORSE"}, "found", [4, 2, 1],
         "first bad: v1 (last good: v0)"),
    ],
)  # fmt: skip
def test_the_search_stops_at_the_first_step_it_cannot_follow(
    baseline, script, outcome, evaluated, said
):
    """The pure search (core/analysis/bisect.py) on scripted judgements: it never goes past an
    undecided or failed step, and says what is left."""
    asked = []

    def evaluate(i: int) -> Step:
        asked.append(i)
        return Step(f"v{i}", script[i], f"r{i}", "", "why", 1)

    found = bisect([f"v{i}" for i in range(5)], Step("v0", baseline, "r0", "", "why", 1),
                   evaluate)  # fmt: skip
    assert (found.outcome, asked) == (outcome, evaluated)
    assert said in found.final_line()
    assert found.exit_code == {"found": 0, "error": 2, "undecided": 3}[outcome]
    assert found.model_calls == 1 + len(evaluated)
