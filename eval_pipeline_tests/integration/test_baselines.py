"""Baselines a team manages, through the CLI from a team's project outside this repository:
`eval-pipeline runs list|retire|restore` and `eval-pipeline baseline show|set|unset`
(docs/running.md "Baselines: list, show, pin, retire"); a run on init's example cases or
whose every item failed in the agent is never chosen; every change kept as history; bad
input exits 2 naming the value and what there is."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from eval_pipeline import settings
from eval_pipeline.cli import main
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import in_team_project, write_team_project
from eval_pipeline_tests.stranger import cases_yaml, write_project_files

# v1 (production) right on every case; v2 wrong on half of them; broken (BROKEN set): a
# crash in the agent on every case.
AGENT = """
import os


def answer(input, ctx):
    if os.environ.get("BROKEN"):
        raise KeyError("price")
    a, b = input["a"], input["b"]
    wrong = "roughly" in ctx.system_prompt() and a % 2 == 0
    return {"response": "The sum is " + str(a + b + (1 if wrong else 0)) + "."}
"""
VERSIONS = {1: "Add the two numbers.", 2: "Add the two numbers roughly."}
RUN_ID = re.compile(r"\(run\s+(\S+?)\)")


@pytest.fixture
def team(tmp_path, monkeypatch) -> Iterator[Path]:
    cases = [{"id": f"sum-{i:02d}", "input": {"message": f"{i} + {i}?", "a": i, "b": i},
              "expected_output": {"expected_fields": [str(2 * i)]},
              "metadata": {"category": "sum", "difficulty": "easy",
                           "tier": "smoke" if i < 4 else "full"}}
             for i in range(12)]  # fmt: skip
    thresholds = {"primary_metric": "completeness", "min_mean": {"completeness": 0.3},
                  "regression": {"margin": 0.1, "pass_threshold": 1.0}}  # fmt: skip
    project = write_team_project(tmp_path / "team", "summing", AGENT, cases, thresholds, VERSIONS)
    with in_team_project(tmp_path, monkeypatch, project, "summing") as root:
        yield root


def cli(*args: str):
    return CliRunner().invoke(main, list(args), terminal_width=300)


def run(*args: str, suite: str = "summing") -> tuple[str, object]:
    """A run of the suite: (its run id, what the CLI did)."""
    done = cli("run", "--suite", suite, *args)
    found = RUN_ID.search(done.output)
    assert found, done.output
    return found.group(1), done


def store() -> ResultsStore:
    return ResultsStore(settings.results_url())


def refused(*args: str) -> str:
    """The CLI's message for bad input: exit 2, and ``Error: …``."""
    done = cli(*args)
    assert done.exit_code == 2, done.output
    return done.output


def test_a_run_whose_every_item_failed_in_the_agent_is_never_the_baseline(team, monkeypatch):
    """The agent crashed on every case: the run settles (FAIL agent_errors) and says it is
    not a baseline; the next run, of a working agent, has no baseline yet (naming the crash
    run passed over) and becomes it."""
    with monkeypatch.context() as broken:
        broken.setenv("BROKEN", "1")
        crashed, done = run()
    assert done.exit_code == 1, done.output
    last = done.output.strip().splitlines()[-1]
    assert last.startswith("VERDICT: FAIL") and "agent_errors" in last
    assert "note: not a baseline: every item (12) failed in the agent (first: sum-00: " \
           "KeyError" in last  # fmt: skip
    assert store().get_run(crashed).not_baseline.startswith("not a baseline: every item")
    working, done = run()
    assert done.exit_code == 0, done.output
    assert f"passed over: {crashed}: not a baseline" in done.output
    _, done = run("--prompt-version", "2", "--baseline", "production", "--json", "out.json")
    assert done.exit_code == 1, done.output
    assert json.loads(Path("out.json").read_text())["gate"]["baseline_run_id"] == working


def test_list_show_pin_unpin_retire_restore(team):
    first, _ = run()
    second, _ = run()
    staging, _ = run("--prompt-version", "2")
    listed = cli("runs", "list", "--suite", "summing")
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[1].startswith(f"{staging}  v2  full  complete")
    assert lines[3] == f"{second}  v1 production  full  complete  ← baseline"
    assert "FAIL: min_mean_scores" not in lines[2] and "12 items, 0 failed" in lines[2]
    shown = cli("baseline", "show", "--suite", "summing").output
    assert f"summing's production baseline: run {second} (v1, full" in shown
    assert "why: the latest complete full-tier run of production (v1)" in shown

    pinned = cli("baseline", "set", first, "--why", "the release we compare with")
    assert pinned.exit_code == 0, pinned.output
    shown = cli("baseline", "show", "--suite", "summing").output
    assert f"run {first}" in shown and "pinned as summing's production baseline" in shown
    assert "the release we compare with" in shown
    assert f"{first}  v1 production  full  complete  ← pinned baseline" in \
        cli("runs", "list", "--suite", "summing").output  # fmt: skip
    _, gated = run("--prompt-version", "2", "--baseline", "production", "--json", "out.json")
    assert json.loads(Path("out.json").read_text())["gate"]["baseline_run_id"] == first
    said = refused("runs", "retire", first, "--why", "x")
    assert "is summing's pinned production baseline" in said
    unpinned = cli("baseline", "unset", "--suite", "summing")
    assert unpinned.exit_code == 0 and f"run {second}" in unpinned.output, unpinned.output

    retired = cli("runs", "retire", second, "--why", "the endpoint was a staging one")
    assert retired.exit_code == 0, retired.output
    assert f"summing's production baseline: run {first}" in retired.output  # what follows
    assert f"passed over: {second}: retired by " in retired.output
    listed = cli("runs", "list", "--suite", "summing").output
    assert f"{second}  v1 production  full  complete  ← retired" in listed
    assert "the endpoint was a staging one" in listed
    restored = cli("runs", "restore", second)
    assert restored.exit_code == 0 and f"baseline: run {second}" in restored.output
    history = [(c.action, c.run_id, c.why) for c in store().changes("summing")]
    assert history == [("pin", first, "the release we compare with"),
                       ("unpin", first, "no reason given"),
                       ("retire", second, "the endpoint was a staging one"),
                       ("restore", second, "no reason given")]  # fmt: skip
    assert {r.run_id for r in store().list_runs(suite="summing")} == {first, second, staging,
                                                                      _run_of(gated)}


def _run_of(done) -> str:
    return RUN_ID.search(done.output).group(1)


def test_retiring_the_only_run_leaves_no_baseline_until_the_next_full_run(team):
    only, _ = run()
    done = cli("runs", "retire", only, "--why", "a bad endpoint")
    assert done.exit_code == 0, done.output
    assert "summing's production baseline: none: no baseline yet" in done.output
    assert f"passed over: {only}: retired by" in done.output
    nxt, done = run()
    assert f"passed over: {only}: retired by" in done.output
    assert f"baseline: run {nxt}" in cli("baseline", "show", "--suite", "summing").output


def test_bad_input_exits_2_naming_the_value_and_what_there_is(team, monkeypatch):
    with monkeypatch.context() as broken:
        broken.setenv("BROKEN", "1")
        crashed, _ = run()
    complete, _ = run()
    smoke, _ = run("--tier", "smoke")
    said = refused("runs", "list", "--suite", "suming")
    assert "--suite 'suming': no such suite" in said and "declares summing" in said
    assert "did you mean 'summing'?" in said
    said = refused("baseline", "show", "--suite", "nope")
    assert "'nope'" in said and "has runs of summing" in said
    said = refused("runs", "retire", "summing-v1-000000000000", "--why", "x")
    assert "run 'summing-v1-000000000000' is not in the results store" in said
    assert smoke in said  # the latest runs
    assert "--why" in refused("runs", "retire", complete)  # the reason is required
    said = refused("baseline", "set", smoke, "--why", "x")
    assert "ran the smoke tier" in said and complete in said
    said = refused("baseline", "set", crashed, "--why", "x")
    assert "may never be a baseline (not a baseline: every item (12) failed" in said
    said = refused("baseline", "unset", "--suite", "summing")
    assert "summing has no pinned baseline for 'production' (its pins: none)" in said
    said = refused("runs", "restore", complete)
    assert f"run {complete} of summing is not retired (its retired runs: none)" in said
    assert cli("runs", "retire", complete, "--why", "x").exit_code == 0
    assert "is retired already" in refused("runs", "retire", complete, "--why", "x")
    said = refused("baseline", "set", complete, "--why", "x")
    assert "is retired (retired by" in said and f"runs restore {complete}" in said


@pytest.fixture
def weather_team(tmp_path, monkeypatch) -> Iterator[Path]:
    root = tmp_path / "team-repo"
    root.mkdir()
    write_project_files(root, kind="callable")
    with in_team_project(tmp_path, monkeypatch, root / "eval-pipeline.yaml",
                         "weather_agent") as folder:  # fmt: skip
        made = cli("init", "--agent", "weather_agent.agent:answer", "--name", "support",
                   "--prompt", "weather/assistant")  # fmt: skip
        assert made.exit_code == 0, made.output
        assert "eval-pipeline run --suite support" in made.output  # the next command
        yield folder


def test_a_run_on_inits_examples_is_never_the_baseline(weather_team):
    """init's next command, run as printed on its examples: it settles, and its verdict
    line says it is not a baseline and why; the first run on the team's real cases has no
    baseline and becomes it, and staging is gated against that run — not "not comparable"
    against the examples' run (ERROR, exit 2, before)."""
    examples, done = run(suite="support")
    assert done.exit_code in (0, 1), done.output
    last = done.output.strip().splitlines()[-1]
    assert "note: not a baseline: its cases support-example-01, support-example-02, " \
           "support-example-03 are the examples" in last  # fmt: skip
    shown = cli("baseline", "show", "--suite", "support").output
    assert "support's production baseline: none: no baseline yet" in shown
    assert f"passed over: {examples}: not a baseline: its cases" in shown

    (weather_team / "evals" / "support" / "cases.yaml").write_text(cases_yaml())
    first, done = run(suite="support")
    assert done.exit_code in (0, 1), done.output
    assert "not comparable" not in done.output and "no baseline yet" in done.output
    _, done = run("--label", "staging", "--baseline", "production", "--json", "out.json",
                  suite="support")  # fmt: skip
    assert done.exit_code != 2 and "not comparable" not in done.output, done.output
    assert json.loads(Path("out.json").read_text())["gate"]["baseline_run_id"] == first
    shown = cli("baseline", "show", "--suite", "support").output
    assert f"support's production baseline: run {first} (v1, full" in shown
    assert "comparable with the suite's cases now" in shown
    listed = cli("runs", "list", "--suite", "support").output
    assert f"{examples}  v1 production  full  complete  ← not a baseline" in listed
    assert yaml.safe_load(Path("evals/support/cases.yaml").read_text())  # (the real ones)
