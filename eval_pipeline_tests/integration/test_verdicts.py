"""Verdicts people can trust and read: a changed evaluator re-scores the baseline instead of
comparing silently, nothing passes untested, errors are shown by kind in every output, the
CLI ends with its verdict, --verbose shows each case."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline.core.scoring.checks import run_thresholds
from eval_pipeline.core.scoring.gate import compare_runs
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.helpers import clean_cli_env
from eval_pipeline_tests.model_server import LocalOpenAIServer
from eval_pipeline_tests.unit.test_gate import ITEMS, THRESHOLDS, data, record


def cli(*args: str):
    return CliRunner().invoke(main, list(args), terminal_width=200)


def last_line(output: str) -> str:
    return output.strip().splitlines()[-1]


# --- a changed evaluator --------------------------------------------------------------------
PLAIN_EVALUATOR = '''
from eval_pipeline.evaluators.declare import evaluator


@evaluator
def polite(*, output, **_):
    """1.0 for every answer: a first, lenient version."""
    return {factor}
'''


def with_project_evaluator(project: Path, factor: str) -> None:
    (project.parent / "team_evals.py").write_text(PLAIN_EVALUATOR.format(factor=factor))
    sys.modules.pop("team_evals", None)  # a new process would import the edited file
    body = yaml.safe_load(project.read_text())
    suite = body["suites"]["drive_thru"]
    if "team_evals:polite" not in suite["evaluators"]:
        suite["evaluators"].append("team_evals:polite")
    project.write_text(yaml.safe_dump(body, sort_keys=False))


def test_editing_a_project_evaluator_re_scores_the_baseline(project):
    """The baseline was scored by `polite` returning 1.0; the edited `polite` returns 0.5.
    Compared silently, that is a drop of 0.5 on every item; re-scored, there is none."""
    with_project_evaluator(project, "1.0")
    assert cli("run", "--suite", "drive_thru").exit_code == 0  # the production baseline
    with_project_evaluator(project, "0.5")
    report = project.parent / "gate.json"
    ran = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--baseline", "production",
              "--json", str(report))  # fmt: skip
    text = " ".join(ran.output.split())
    assert ran.exit_code == 0, ran.output
    assert "baseline re-scored with this run's evaluators (polite" in text
    gate = json.loads(report.read_text())["gate"]
    assert gate["comparable"] and "no agent calls" in gate["notes"][0]
    tool = next(c for c in gate["checks"] if c["name"] == "paired_gate")
    assert all(r["delta"] == 0.0 for r in tool["rows"])
    assert last_line(ran.output) == "VERDICT: PASS (exit 0)"
    sys.modules.pop("team_evals", None)


def test_a_built_in_evaluator_changed_since_the_baseline_is_re_scored(project):
    """As if the baseline was scored by an older eval-pipeline whose tool_call_accuracy
    scored differently: its stored version and scores differ from today's."""
    assert cli("run", "--suite", "drive_thru").exit_code == 0
    store = ResultsStore(f"sqlite:///{project.parent.parent / 'home' / 'results.sqlite'}")
    (baseline,) = store.list_runs(suite="drive_thru")
    old = {**baseline.evaluator_versions, "tool_call_accuracy": "old-version"}
    with store.engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(text("UPDATE runs SET evaluator_versions = :v WHERE run_id = :r"),
                     {"v": json.dumps(old), "r": baseline.run_id})  # fmt: skip
        conn.execute(text("UPDATE item_scores SET value = 0.25 WHERE run_id = :r AND "
                          "evaluator = 'tool_call_accuracy'"), {"r": baseline.run_id})  # fmt: skip
    ran = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--baseline", "production")
    text_ = " ".join(ran.output.split())
    assert ran.exit_code == 0, ran.output  # +0.75 against the stored scores; 0 re-scored
    assert "tool_call_accuracy old-version →" in text_ and "re-scored" in text_


def test_re_scoring_the_baseline_calls_judges_as_the_run_does(project, monkeypatch):
    """Re-scoring the baseline may call LLM judges: under the run's own concurrency,
    timeout and rate, as scoring the run itself does (before: the runner's defaults)."""
    from eval_pipeline.core.evaluation import baseline, stages

    with_project_evaluator(project, "1.0")
    assert cli("run", "--suite", "drive_thru").exit_code == 0
    with_project_evaluator(project, "0.5")
    seen, real = [], stages.score_items

    def spy(*a, **kw):
        seen.append(kw.get("judges"))
        return real(*a, **kw)

    for module in (stages, baseline):  # the run's scores, the baseline re-scored
        monkeypatch.setattr(module, "score_items", spy)
    ran = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--baseline", "production",
              "--concurrency", "3", "--timeout", "45")  # fmt: skip
    assert ran.exit_code == 0, ran.output
    assert len(seen) == 2  # the run, then the baseline re-scored
    assert all(j is not None and (j.concurrency, j.timeout_s) == (3, 45) for j in seen), seen
    sys.modules.pop("team_evals", None)


# --- nothing passes untested ----------------------------------------------------------------
def test_checks_that_test_nothing_say_so_instead_of_passing():
    bare = Thresholds.model_validate({"primary_metric": "quality"})
    checks = {c.name: c.outcome for c in run_thresholds(None, [], bare)}
    for name in ("min_mean_scores", "all_items_pass", "category_floors"):
        assert not checks[name].tested and checks[name].label(True) == "N/A"
        assert checks[name].description.startswith("not tested: ")
    assert not checks["all_items_pass"].description.rstrip().endswith(" on")
    report = compare_runs(record("b"), record("c"), data({}), data({}), bare,
                          dict.fromkeys(ITEMS, "a"))  # fmt: skip
    found = {c.name: c for c in report.checks}
    assert found["binary_gate"].label == "N/A" and "no pass/fail metrics" in (
        found["binary_gate"].description
    )
    assert found["cost_latency"].label == "N/A"  # no maximum ratio: shown, not gated
    assert found["paired_gate"].label == "PASS"


def test_a_one_item_category_is_shown_not_tested():
    """Before: "significantly worse" with CI [−1, −1] and p = 0 on a single item."""
    categories = {i: "big" for i in ITEMS} | {ITEMS[0]: "tiny"}
    report = compare_runs(record("b"), record("c"), data({}), data({ITEMS[0]: 0.0}),
                          THRESHOLDS, categories)  # fmt: skip
    deltas = next(c for c in report.checks if c.name == "category_deltas")
    tiny = next(r for r in deltas.rows if r.category == "tiny")
    assert tiny.delta == -1.0 and tiny.p_value is None and tiny.ci_low is None
    assert "too few items to test (n=1 < 5)" in tiny.note
    assert deltas.outcome == "pass" and "tiny" not in deltas.description.split("(")[0]
    assert "1 with fewer than 5 items: not tested" in deltas.description


# --- errors, verbose, the verdict -----------------------------------------------------------
def refuse_some(body):
    """A server that refuses two kinds of request: an unknown model for greetings, an
    over-long context for orders with a burrito."""
    said = " ".join(str(m.get("content")) for m in body.get("messages", [])
                    if m.get("role") == "user").lower()  # fmt: skip
    if "burrito" in said:
        return (400, "This model's maximum context length is 4096 tokens")
    if "hello" in said or "good morning" in said:
        return (404, "The model `offline` does not exist")
    return None


def test_errors_are_shown_by_kind_in_every_output(project, monkeypatch):
    out = project.parent / "out"
    with LocalOpenAIServer(fault=refuse_some) as server:
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", "none")
        monkeypatch.setenv("EVAL_LLM_MODEL", "offline")
        ran = cli("run", "--suite", "drive_thru", "--cache", "off", "--json",
                  str(out / "r.json"), "--report", str(out / "r.md"))  # fmt: skip
    text = " ".join(ran.output.split())
    body = json.loads((out / "r.json").read_text())
    kinds = body["summary"]["errors_by_kind"]
    assert set(kinds) == {"HTTP 400 server_error", "HTTP 404 server_error"}, kinds
    long = kinds["HTTP 400 server_error"]
    assert long["count"] >= 1 and "maximum context length" in long["example"]
    assert "Errors by kind" in text and "HTTP 400 server_error" in text
    assert "maximum context length" in text
    markdown = (out / "r.md").read_text()
    assert "## Errors (" in markdown and "maximum context length" in markdown
    errored = [row for row in body["items"] if row["error"]]
    assert len(errored) == body["summary"]["n_errors"] and all(r["error_kind"] for r in errored)
    # A refused request is not the agent's failure: no verdict on the agent (ERROR), the
    # reason on the last line, cut at a word when long, whole in the JSON and on stderr.
    assert body["verdict"] == "ERROR" and ran.exit_code == 2
    errored = body["summary"]["n_errors"]
    reason = body["errors"][0]
    assert reason.startswith(f"{errored} of 47 items failed for reasons outside the agent "
                             "(HTTP 400 server_error ×")  # fmt: skip
    verdict = last_line(ran.output)
    assert verdict.startswith(f"VERDICT: ERROR — {errored} of 47 items failed")
    assert verdict.endswith(" … (exit 2)") and len(verdict) < 230
    shown = verdict.removeprefix("VERDICT: ERROR — ").removesuffix(" … (exit 2)")
    assert reason.startswith(shown) and reason[len(shown)] == " "  # never cut mid-word


def test_verbose_prints_one_block_per_case_and_the_last_line_is_the_verdict(project):
    ran = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--verbose")
    assert ran.exit_code == 0
    blocks = [line for line in ran.output.splitlines() if "· repeat 0" in line]
    assert len(blocks) == 11
    assert "tools called: lookup_menu_item" in ran.output and "latency" in ran.output
    assert last_line(ran.output) == "VERDICT: PASS (exit 0)"
    worse = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--prompt-version", "2",
                "--threshold", "0.99")  # fmt: skip
    assert worse.exit_code == 1
    assert last_line(worse.output).startswith("VERDICT: FAIL — min_mean_scores")
    missing = cli("run", "--suite", "nope")
    assert missing.exit_code == 2 and last_line(missing.output).startswith("VERDICT: ERROR — ")


# --- LLM judges go through the runner -------------------------------------------------------
def with_judge(project: Path) -> None:
    body = yaml.safe_load(project.read_text())
    body["suites"]["drive_thru"]["evaluators"].append(
        {"llm_judge": {"rubric": "Is the answer polite?", "model": "judge-model",
                       "name": "politeness"}}
    )  # fmt: skip
    project.write_text(yaml.safe_dump(body, sort_keys=False))


@pytest.fixture
def served(project, monkeypatch):
    """The project with an LLM judge, against a model server that answers in 0.1 s."""
    with_judge(project)

    def judge_fails(body):
        return (500, "judge overloaded") if failing and body["model"] == "judge-model" else None

    failing: list[bool] = []
    with LocalOpenAIServer(latency_s=0.1, fault=judge_fails,
                           models=("offline", "judge-model")) as server:  # fmt: skip
        monkeypatch.setenv("EVAL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EVAL_LLM_API_KEY", "none")
        monkeypatch.setenv("EVAL_LLM_MODEL", "offline")
        yield project, server.app.state.stats, failing


def test_judge_calls_are_bounded_counted_apart_and_recorded_with_their_scores(served):
    project, stats, _ = served
    out = project.parent / "judged.json"
    ran = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--concurrency", "3",
              "--cache", "off", "--json", str(out))  # fmt: skip
    assert ran.exit_code == 0, ran.output
    body = json.loads(out.read_text())
    summary = body["summary"]
    assert summary["judge_calls"] == 11 == stats["by_model"]["judge-model"]
    assert summary["judge_tokens"]["input"] > 0 and summary["judge_cost_usd"] >= 0
    assert stats["max_in_flight"] <= 3  # the judges kept to the run's concurrency too
    # the agent's tokens are the agent's: no judge-model call among the items' usage
    store = ResultsStore(f"sqlite:///{project.parent.parent / 'home' / 'results.sqlite'}")
    (run,) = store.list_runs(suite="drive_thru")
    assert all(set(o.usage) == {"offline"} for o in store.read_outputs(run.run_id))
    detail = body["items"][0]["score_details"]["politeness"]
    assert detail["metadata"]["judge_model"] == "judge-model" and detail["comment"]
    assert detail["metadata"]["judge_calls"] == 1
    stored = [s for s in store.read_scores(run.run_id) if s.evaluator == "politeness"]
    assert len(stored) == 11 and all(s.metadata["judge_prompt_hash"] for s in stored)
    assert "LLM judges (not in the agent's cost): 11 call(s)" in " ".join(ran.output.split())


def test_a_failing_judge_call_is_retried_by_its_client_then_recorded_on_its_score(served):
    project, stats, failing = served
    failing.append(True)
    out = project.parent / "judged.json"
    ran = cli("run", "--suite", "drive_thru", "--tier", "smoke", "--cache", "off",
              "--json", str(out))  # fmt: skip
    body = json.loads(out.read_text())
    assert stats["by_model"]["judge-model"] == 3 * 11  # 1 + max_retries per call, no more
    judged = [r["score_details"]["politeness"] for r in body["items"]]
    assert all(d["comment"].startswith("judge error (HTTP 500") for d in judged)
    assert all(r["scores"]["politeness"] is None for r in body["items"])
    assert ran.exit_code == 0  # the judge is not a gated metric here; the agent is fine


# --- whose failure -----------------------------------------------------------------------------
LOOPING_AGENT = """
from langgraph.graph import END, START, MessagesState, StateGraph


def think(state):
    return {}


def build(ctx):
    graph = StateGraph(MessagesState)
    graph.add_node("think", think)
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", lambda state: "think" if {loops} else END)
    return graph.compile()
"""


def test_an_agent_that_loops_fails_the_run_it_is_not_a_runtime_problem(tmp_path, monkeypatch):
    """LangGraph's GraphRecursionError is the agent's behaviour: before, the verdict was
    ERROR (exit 2, "a runtime problem"); a prompt that makes the agent loop is a
    regression."""
    from eval_pipeline_tests.stranger import cases_yaml

    root = tmp_path / "repo"
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "cases.yaml").write_text(cases_yaml())
    (root / "looping.py").write_text(LOOPING_AGENT.replace("{loops}", "True"))
    (root / "eval-pipeline.yaml").write_text(
        "suites:\n  loop:\n    agent: looping:build\n    dataset: evals\n"
        "    evaluators: [correctness]\n"
    )
    clean_cli_env(monkeypatch, tmp_path / "home", root / "eval-pipeline.yaml")
    out = tmp_path / "loop.json"
    ran = cli("run", "--suite", "loop", "--json", str(out))
    assert ran.exit_code == 1, ran.output
    body = json.loads(out.read_text())
    assert body["verdict"] == "FAIL" and "agent_errors" in body["failed"]
    kinds = body["summary"]["errors_by_kind"]
    assert set(kinds) == {"recursion limit"} and kinds["recursion limit"]["fault"] == "agent"
    assert last_line(ran.output).startswith("VERDICT: FAIL — ")


def test_a_stepwise_step_that_errored_is_an_error_never_a_0():
    """Before: 21 HTTP 500s inside the step-by-step scoring were only in score comments
    (n_errors 0, errors_by_kind {}) and stepwise_score read 0.0, a wrong answer."""
    from eval_pipeline.core.evaluation import EvalResult
    from eval_pipeline.core.scoring.apply import score_items
    from eval_pipeline.core.scoring.summary import summarize
    from eval_pipeline.core.store.records import ItemOutput
    from eval_pipeline.core.suites.cases import GoldenCase
    from eval_pipeline.evaluators import stepwise_score, survived_until

    case = GoldenCase.model_validate({
        "id": "rs-1", "input": {"question": "Where?"},
        "expected_output": {"answer": "Velmora", "trajectory": []},
        "metadata": {"category": "lookup", "difficulty": "easy", "tier": "smoke"},
    })  # fmt: skip
    steps = [{"step": 0, "score": 1.0, "comment": "ok"},
             {"step": 1, "score": 0.0, "comment": "error: HTTP 500", "error": "HTTP 500 boom",
              "error_kind": "HTTP 500"}]  # fmt: skip
    output = ItemOutput("rs-1", 0, {"response": "Velmora", "steps": steps,
                                    "stepwise_score": 0.5, "survived_until": 0.5})  # fmt: skip
    scores = score_items([case], [output], [stepwise_score, survived_until])
    assert all(s.value is None and s.error_kind == "HTTP 500" for s in scores)
    assert "1 of 2 stepwise steps failed with an error (step 1: HTTP 500 boom)" in (
        scores[0].comment
    )  # fmt: skip
    summary = summarize([case], [output], scores)
    assert summary.n_score_errors == 2
    assert set(summary.score_errors_by_kind) == {"stepwise_score: HTTP 500",
                                                 "survived_until: HTTP 500"}  # fmt: skip
    gated = Thresholds.model_validate({"primary_metric": "answer_correct",
                                       "min_mean": {"stepwise_score": 0.8}})  # fmt: skip
    result = EvalResult(record("c"), summary, [], gated, [output], scores)
    assert result.verdict == "ERROR" and "scores could not be given" in result.errors[0]
    reported = Thresholds.model_validate({"primary_metric": "answer_correct"})
    result = EvalResult(record("c"), summary, [], reported, [output], scores)
    assert result.verdict == "PASS" and "stepwise_score: HTTP 500" in result.notes[0]


# --- an undecided gate ----------------------------------------------------------------------
def test_an_undecided_gate_is_never_a_pass(project, tmp_path):
    """order_management's deliberately worse staging prompt on its five smoke cases, with
    the fixed-n gate, at a margin of 0.02: the paired gate cannot tell. It used to print
    "VERDICT: PASS (exit 0)"; now the verdict is UNDECIDED, exit 3, in every output."""
    assert cli("run", "--suite", "order_management", "--label", "production").exit_code == 0
    out = tmp_path / "out"
    files = ["--json", str(out / "r.json"), "--junit", str(out / "r.xml"),
             "--report", str(out / "r.md")]  # fmt: skip
    result = cli("run", "--suite", "order_management", "--label", "staging", "--tier", "smoke",
                 "--baseline", "production", "--gate", "fixed", "--margin", "0.02",
                 *files)  # fmt: skip
    line = last_line(result.output)
    assert result.exit_code == 3, result.output
    assert line.startswith("VERDICT: UNDECIDED — overall: cannot tell at n=5"), line
    assert "cases" in line and line.endswith("(exit 3)")
    body = json.loads((out / "r.json").read_text())
    assert (body["verdict"], body["exit_code"]) == ("UNDECIDED", 3)
    assert body["undecided"] and body["undecided"][0].startswith("overall")
    paired = next(c for c in body["gate"]["checks"] if c["name"] == "paired_gate")
    assert paired["result"] == "UNDECIDED"
    assert "**Verdict: UNDECIDED (exit 3)" in (out / "r.md").read_text()
    junit = (out / "r.xml").read_text()
    assert 'name="paired_gate"' in junit and "<failure" in junit.split('name="paired_gate"')[1]

    warned = cli("run", "--suite", "order_management", "--label", "staging", "--tier", "smoke",
                 "--baseline", "production", "--gate", "fixed", "--margin", "0.02",
                 "--on-undecided", "warn")  # fmt: skip
    assert warned.exit_code == 0, warned.output
    assert last_line(warned.output).startswith("VERDICT: UNDECIDED — overall")
    assert "on_undecided is warn" in last_line(warned.output)
    bad = cli("run", "--suite", "order_management", "--on-undecided", "pass")
    assert bad.exit_code == 2 and "--on-undecided" in bad.output


def test_the_sequential_gate_goes_on_until_it_knows(project, tmp_path):
    """The sequential gate (--gate sequential): the smoke tier's five cases first, then more of
    the suite's in batches, until the confidence sequence decides: order_management's worse staging
    prompt is FAIL (or, with every case run, UNDECIDED), never PASS; the version gated
    against itself is a PASS: at the suite's margin (0.2) its tied pairs decide NOT WORSE
    before the suite is through (16 tied pairs decide 0.2); at a margin its cases cannot
    decide (0.02) it is UNCHANGED, a pass that needs no statistics, once every case ran."""
    assert cli("run", "--suite", "order_management", "--label", "production").exit_code == 0
    out = tmp_path / "seq.json"
    staged = cli("run", "--suite", "order_management", "--label", "staging", "--tier", "smoke",
                 "--baseline", "production", "--gate", "sequential",
                 "--json", str(out))  # fmt: skip
    assert staged.exit_code in (1, 3), staged.output
    assert "Sequential gate: " in staged.output and " of 32 cases" in staged.output
    body = json.loads(out.read_text())
    assert body["sequential"] and body["summary"]["n_cases"] > 5
    paired = next(c for c in body["gate"]["checks"] if c["name"] == "paired_gate")
    assert "sequential" in paired["description"]

    same = cli("run", "--suite", "order_management", "--label", "production", "--tier", "smoke",
               "--baseline", "production", "--gate", "sequential")  # fmt: skip
    assert same.exit_code == 0, same.output
    said = " ".join(same.output.split())
    assert "pairs: not worse" in said and "UNCHANGED" not in said, same.output
    assert "Sequential gate: decided after " in said and "decided after 32 of" not in said
    same = cli("run", "--suite", "order_management", "--label", "production", "--tier", "smoke",
               "--baseline", "production", "--gate", "sequential",
               "--margin", "0.02")  # fmt: skip
    assert same.exit_code == 0, same.output
    # UNCHANGED needs every case the baseline ran (the memo answers them: no model call)
    assert "UNCHANGED" in same.output and "decided after 32 of 32 cases" in same.output
    fixed = cli(
        "run",
        "--suite",
        "order_management",
        "--label",
        "production",
        "--tier",
        "smoke",
        "--baseline",
        "production",
        "--margin",
        "0.02",
        "--json",
        str(out),
    )  # the fixed gate: the same
    assert fixed.exit_code == 0, fixed.output
    paired = next(c for c in json.loads(out.read_text())["gate"]["checks"]
                  if c["name"] == "paired_gate")  # fmt: skip
    assert paired["description"].startswith("UNCHANGED: ") and paired["result"] == "PASS"


def test_the_dagster_check_and_python_api_never_pass_an_undecided_gate(project):
    """The undecided order_management smoke gate (fixed) through the Python API: UNDECIDED exits 3
    and the paired_gate asset check fails saying UNDECIDED; with on_undecided="warn" the
    exit is 0. Either way its Dagster look is a warning (yellow), not FAIL's red ERROR,
    leading with the undecided metric, its Δ and interval; whether it blocks is in its
    metadata and the run's log. (Test written by a helper on another branch, adapted.)"""
    from eval_pipeline import api
    from eval_pipeline.core.reports.result_file import ResultFile
    from eval_pipeline.defs.evaluation.asset_checks import (
        CheckedPartition,
        check_results,
        verdict_message,
    )

    partition = CheckedPartition("order_management", "v2")
    api.evaluate("order_management", prompt_version=1)
    for policy, code in (("fail", 3), ("warn", 0)):
        result = api.evaluate("order_management", label="staging", tier="smoke",
                              baseline_label="production", on_undecided=policy,
                              gate="fixed")  # fmt: skip
        assert result.verdict == "UNDECIDED" and result.exit_code == code
        view = ResultFile.of(result)
        checks, _ = check_results(view, partition)
        paired = next(c for c in checks if c.check_name == "paired_gate")
        said = result.verdict_record()
        lead = f"UNDECIDED — order_management v2: {said.metric} Δ {said.delta_text} "
        assert not paired.passed and paired.description.startswith(lead), paired.description
        assert paired.severity.value == "WARN"
        assert paired.metadata["on_undecided"].value == policy
        blocks = "it blocks as a FAIL does" if policy == "fail" else "it does not block"
        assert f"order_management v2: UNDECIDED — the gate could not tell; {blocks}" in (
            verdict_message(view, partition))  # fmt: skip
    # The verdicts view shows the Δ of a metric the gate could not decide, not one it did
    said = result.verdict_record()
    assert said.metric in {row.metric for row in result.undecided_rows}, said
    # A run that FAILs a threshold while its gate could not tell says both: before, the
    # step failure listed min_mean_scores only, and a reader took the gate for a finding.
    failing = view.model_copy(update={"verdict": "FAIL", "failed": ["min_mean_scores"]})
    said = verdict_message(failing, partition)
    assert said.startswith("order_management v2: FAIL — blocking checks failed: min_mean_scores")
    assert "- undecided (not a regression found): " in said


def test_an_undecided_whitespace_change_says_what_it_learned(project, tmp_path):
    """A prompt change that is only whitespace, on drive_thru's 47 cases at a margin of
    0.02 (finer than they decide; at the suite's own, 0.15, it is a PASS:
    test_example_margins.py): every pair ties and the suite is too small to call it not
    worse. The report says
    what the run did establish: the bound, anytime-valid, with its confidence; how the pairs
    split; the best bound 47 pairs can give; that the suite cannot decide 0.02 and the
    margin it can; the drop it would catch; and, every case paired, that the suite cannot
    decide it (174 tied pairs decide 0.02: it said "about 127 more pairs (174 in all)" of a
    suite of 47, and 357 before that)."""
    prompts = project.parent / "prompts" / "drive-thru" / "orchestrator"
    body = yaml.safe_load((prompts / "v1.yaml").read_text())
    body["prompt"][0]["content"] = body["prompt"][0]["content"].rstrip() + "  \n"
    (tmp_path / "ws.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    assert cli("run", "--suite", "drive_thru").exit_code == 0
    added = cli("prompts", "add", "drive-thru/orchestrator", str(tmp_path / "ws.yaml"))
    assert added.exit_code == 0, added.output
    report, out = tmp_path / "r.md", tmp_path / "r.json"
    done = cli("run", "--suite", "drive_thru", "--prompt-version", "3", "--tier", "smoke",
               "--baseline", "production", "--margin", "0.02", "--report", str(report),
               "--json", str(out))  # fmt: skip
    assert done.exit_code == 3, done.output
    text = " ".join(report.read_text().split())
    for said in ("not worse by more than 0.072 so far (95%, anytime-valid)",
                 "the whole suite (47 cases) is paired and cannot decide it",
                 "0 pairs worse, 0 better, 47 tied",
                 "47 pairs could at best show not worse by more than 0.072",
                 "the whole suite (47 cases) cannot decide a margin of 0.02: the finest it "
                 "can is 0.072", "with 80% probability"):  # fmt: skip
        assert said in text, said
    rows = next(c for c in json.loads(out.read_text())["gate"]["checks"]
                if c["name"] == "paired_gate")["rows"]  # fmt: skip
    assert all("the finest it can is 0.072" in r["learned"] for r in rows)


@pytest.mark.parametrize(
    ("outcomes", "backs"),
    [
        ({"overall": "pass", "tool_use": "fail", "groundedness": "fail"}, "tool_use"),
        ({"overall": "pass", "tool_use": "warn", "groundedness": "warn"}, "groundedness"),
        ({"overall": "pass", "tool_use": "pass", "groundedness": "pass"}, "overall"),
    ],
)
def test_the_verdict_keeps_the_delta_of_the_metric_that_backs_it(outcomes, backs):
    """The verdicts view (Dagster's table, `eval-pipeline verdicts`, the PR comment) showed
    the primary metric's Δ for every verdict: a FAIL on tool_use read "+0.010 [-0.010,
    +0.030]". Now: the largest drop found worse, else the undecided metric that could be
    worst, else the primary."""
    from eval_pipeline.core.evaluation import EvalResult, Verdict
    from eval_pipeline.core.scoring.rows import PairedRow

    numbers = {"overall": (0.01, -0.01, 0.03), "tool_use": (-0.30, -0.40, -0.20),
               "groundedness": (-0.10, -0.45, 0.05)}  # fmt: skip
    rows = [
        PairedRow(metric=m, n=20, delta=d, ci_low=lo, ci_high=hi, p_value=None, mde=None,
                  decision=outcomes[m], outcome=outcomes[m], cases_needed=None, note="")
        for m, (d, lo, hi) in numbers.items()
    ]  # fmt: skip
    undecided = [r for r in rows if r.outcome == "warn"]
    gate = SimpleNamespace(checks=[SimpleNamespace(rows=rows, undecided=bool(undecided))],
                           baseline_run_id="base")  # fmt: skip
    result = SimpleNamespace(
        gate=gate, undecided_rows=undecided, thresholds=SimpleNamespace(primary_metric="overall"),
        run=SimpleNamespace(run_id="r"), verdict=Verdict.FAIL, reason="",
        sequential=None,
    )  # fmt: skip
    said = EvalResult.verdict_record(result)
    low, high = numbers[backs][1:]
    assert (said.metric, said.ci_low, said.ci_high) == (backs, low, high)


# --- `eval-pipeline verdicts` in a terminal of 80 columns ----------------------------------
def settled(store: ResultsStore, suite: str, version: str, said: dict) -> str:
    from eval_pipeline.core.store.records import RunRecord, RunStatus, VerdictRecord

    run_id = f"{suite}-{version}-54dc87de8be4"
    store.create_run(RunRecord(run_id=run_id, suite=suite, prompt_name="p",
                               prompt_version=version, prompt_hash="h", dataset_version="d",
                               model="m", tier="full"))  # fmt: skip
    store.settle_run(run_id, RunStatus.COMPLETE, VerdictRecord(run_id, **said))
    return run_id


def test_verdicts_are_readable_at_80_columns(tmp_path, monkeypatch):
    """At 80 columns the ten-column table folded every cell into five-letter shreds
    ("drive / _thru", "tool_ / call_ / accur / acy", a run id over six lines). Now each
    suite and version is a block whose fields are whole on their lines; a terminal wide
    enough for the table still gets the table."""
    home = clean_cli_env(monkeypatch, tmp_path / "home")
    store = ResultsStore(f"sqlite:///{home / 'results.sqlite'}")
    passed = settled(store, "drive_thru_conversations", "v1", {"verdict": "PASS", "reason": ""})
    decided = "decided after 22 of 22 cases (241 model calls)"
    failed = settled(store, "drive_thru_conversations", "v2", {
        "verdict": "FAIL", "reason": "min_mean_scores, all_items_pass, paired_gate",
        "metric": "tool_protocol_every_turn", "delta": -0.382, "ci_low": -0.513,
        "ci_high": -0.014, "decided_after": decided})  # fmt: skip
    from eval_pipeline.cli.report import console

    monkeypatch.setattr(console, "width", 80)  # (rich reads COLUMNS once: conftest's 240)
    narrow = CliRunner().invoke(main, ["verdicts"], terminal_width=80)
    assert narrow.exit_code == 0, narrow.output
    lines = narrow.output.splitlines()
    assert max(len(line) for line in lines) <= 80, narrow.output
    for whole in ("drive_thru_conversations", passed, failed, decided,
                  "FAIL min_mean_scores, all_items_pass, paired_gate",
                  "tool_protocol_every_turn Δ -0.382 [-0.513, -0.014]"):  # fmt: skip
        assert any(whole in line for line in lines), (whole, narrow.output)
    assert narrow.output.count("v1 (full): PASS") == 1
    monkeypatch.setattr(console, "width", 300)
    wide = CliRunner().invoke(main, ["verdicts"], terminal_width=300)
    row = next(line for line in wide.output.splitlines() if failed in line)
    assert "│" in row and "-0.382" in row and "[-0.513, -0.014]" in row and "FAIL" in row
