"""A team's first baseline, from outside the repository through the CLI as a subprocess
(issue 46, "a poisoned baseline with no way out"): `eval-pipeline init` prints a next
command; run on init's three example cases, that run became production's baseline, and
every later run on the team's real cases ended "not comparable: dataset changed" (ERROR,
stored `error`, so it could never replace that baseline), with docs/troubleshooting.md's
advice looping and no command to see or change a baseline.

A store where it already happened (written before the rule that a run on init's examples
is never a baseline: integration/test_baselines.py) recovers by docs/troubleshooting.md
"A baseline on other cases", run as printed there."""

from __future__ import annotations

import re
import shlex
import sqlite3
from pathlib import Path

from eval_pipeline_tests.e2e.test_own_agent import cli, server  # noqa: F401 (a fixture)
from eval_pipeline_tests.e2e.test_readme import doc_block
from eval_pipeline_tests.helpers import ROOT
from eval_pipeline_tests.stranger import cases_yaml, write_project_files

TROUBLESHOOTING = ROOT / "docs" / "troubleshooting.md"
RUN_ID = re.compile(r"\(run\s+(support-v\d+-[0-9a-f]+)\)")


def team(tmp_path: Path) -> Path:
    """The team's repository as init leaves it: its agent, its prompts (production v1,
    staging v2: worse), the suite `support` on init's three example cases."""
    root = tmp_path / "team-repo"
    root.mkdir()
    write_project_files(root, kind="callable")
    made = cli(root, None, "init", "--agent", "weather_agent.agent:answer", "--name", "support",
               "--prompt", "weather/assistant")  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    assert "eval-pipeline run --suite support" in made.stdout  # the next command it prints
    return root


def run(root: Path, server, *args: str):  # noqa: F811
    done = cli(root, server, *args)
    return done, done.stdout + done.stderr


def last_line(done) -> str:
    return done.stdout.strip().splitlines()[-1]


def run_id(output: str) -> str:
    found = RUN_ID.search(output)
    assert found, output
    return found.group(1)


def real_cases(root: Path) -> None:
    (root / "evals" / "support" / "cases.yaml").write_text(cases_yaml())


def test_a_store_poisoned_before_the_rule_recovers_as_troubleshooting_says(tmp_path, server):  # noqa: F811
    """The examples' run is production's baseline, as a store written before the rule
    holds it (the store's decision undone by hand). Every run on the real cases is "not
    comparable"; troubleshooting's commands, run as printed (its suite and RUN_ID filled
    in), retire that run and make the baseline again, and staging is gated (FAIL) again.
    The retired run stays, listed with who retired it and why."""
    root = team(tmp_path)
    done, said = run(root, server, "run", "--suite", "support")
    examples = run_id(said)
    store = root / ".eval_home" / "results.sqlite"
    with sqlite3.connect(store) as db:  # the release before the rule decided nothing
        db.execute("UPDATE runs SET not_baseline = NULL WHERE run_id = ?", (examples,))
    real_cases(root)
    done, said = run(root, server, "run", "--suite", "support", "--label", "staging")
    assert done.returncode == 2, said
    assert "not comparable" in last_line(done) and "dataset changed" in last_line(done)
    done, said = run(root, server, "baseline", "show", "--suite", "support")
    assert f"support's production baseline: run {examples}" in said
    assert "not comparable with the suite's cases now" in said

    commands = doc_block("## A baseline on other cases", TROUBLESHOOTING)
    assert any("runs retire RUN_ID" in c for c in commands), commands
    outcomes = []
    for command in commands:
        args = shlex.split(command.replace("RUN_ID", examples))
        assert args[0] == "eval-pipeline", command
        done, said = run(root, server, *args[1:])
        outcomes.append((command, done.returncode, said))
    assert [code for _, code, _ in outcomes] == [0, 0, 0, 1], outcomes
    rebuilt = run_id(outcomes[2][2])
    assert "VERDICT: FAIL" in outcomes[3][2] and "not comparable" not in outcomes[3][2]

    done, said = run(root, server, "runs", "list", "--suite", "support")
    assert f"{rebuilt}  v1 production  full  complete  ← baseline" in said, said
    assert f"{examples}  v1 production  full  complete  ← retired" in said
    assert "ran on init's example cases" in said
    with sqlite3.connect(store) as db:  # nothing deleted; who, why and when kept
        assert db.execute("SELECT count(*) FROM runs WHERE run_id = ?", (examples,)).fetchone()[0]
        (change,) = db.execute("SELECT action, by, why, at FROM baseline_changes").fetchall()
    assert change[0] == "retire" and change[1] and change[2] == "ran on init's example cases"
