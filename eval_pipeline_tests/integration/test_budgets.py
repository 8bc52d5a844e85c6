"""Budgets (--max-calls, --max-tokens, --max-cost): a run stops starting new items once it
has spent its budget, keeps every item it finished, and says what was decided and what
was not; a run the budget cut short is never a pass of the fixed gate."""

from __future__ import annotations

import json
from pathlib import Path

from eval_pipeline import settings
from eval_pipeline.core.running.budget import Budget, BudgetGuard, Spending
from eval_pipeline.core.store.records import ItemOutput, ItemScore
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline_tests.integration.test_verdicts import cli, last_line


def output(calls: int, tokens: int = 10, cost: float = 0.01, memo: str | None = None):
    return ItemOutput("c", 0, {}, input_tokens=tokens, output_tokens=0, cost_usd=cost,
                      usage={"m": {"calls": calls}}, source_run_id=memo)  # fmt: skip


def test_spending_counts_the_agent_and_the_judges_never_the_memo():
    judged = ItemScore("c", 0, "judge", 1.0, metadata={
        "judge_calls": 2, "judge_input_tokens": 7, "judge_output_tokens": 3,
        "judge_cost_usd": 0.5})  # fmt: skip
    spent = Spending.of_run([output(3), output(5, memo="earlier-run")], [judged])
    assert spent == Spending(calls=5, tokens=20, cost_usd=0.51)


def test_a_budget_names_the_limit_it_reached_and_shares_evenly():
    budget = Budget(max_calls=10, max_cost_usd=1.0)
    assert budget.reached(Spending(9, 0, 0.5)) is None
    assert budget.reached(Spending(10, 0, 0.5)) == "--max-calls 10 reached (10 model calls)"
    assert budget.reached(Spending(1, 0, 1.2)) == "--max-cost 1 reached ($1.2000)"
    assert Budget(max_tokens=100).reached(Spending(0, 100, 0)).startswith("--max-tokens 100")
    assert budget.share(4) == Budget(max_calls=2, max_cost_usd=0.25) and not Budget()
    guard = BudgetGuard(Budget(max_calls=2))
    assert guard.may_start()
    guard.add(Spending(calls=2))
    assert not guard.may_start() and guard.skipped == 1


def run_json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_a_budget_stops_the_run_keeps_what_ran_and_is_never_a_pass(project, tmp_path):
    """A full run of 32 cases with --max-calls 5 (one item at a time): it stops after the
    items that spent 5 calls, keeps them in the store, and — the thresholds were checked
    on a few cases only — is UNDECIDED (exit 3), never PASS; warn exits 0."""
    out = tmp_path / "run.json"
    ran = cli("run", "--suite", "order_management", "--max-calls", "5", "--concurrency", "1",
              "--json", str(out))  # fmt: skip
    assert ran.exit_code == 3, ran.output
    body = run_json(out)
    stopped = body["run"]["stopped"]
    assert stopped.startswith("--max-calls 5 reached (") and "items not started" in stopped
    ran_cases = body["summary"]["n_cases"]
    assert 1 <= ran_cases < 32 and len(body["items"]) == ran_cases
    assert body["verdict"] == "UNDECIDED" and "the budget stopped the run" in body["undecided"][0]
    assert "Budget: --max-calls 5 reached" in " ".join(ran.output.split())
    assert last_line(ran.output).startswith("VERDICT: UNDECIDED — the budget stopped the run")
    store = ResultsStore(settings.results_url())
    kept = store.read_outputs(body["run"]["run_id"])
    spent = Spending.of_run(kept, []).calls
    assert len(kept) == ran_cases and 5 <= spent < 5 + 3  # the last item may overshoot

    warned = cli("run", "--suite", "order_management", "--max-calls", "5",
                 "--concurrency", "1", "--cache", "off", "--on-undecided", "warn")  # fmt: skip
    assert warned.exit_code == 0 and "UNDECIDED" in last_line(warned.output)
    # a run the budget stopped is never a baseline: it lacks cases
    assert "no baseline yet: no complete full-tier run" in " ".join(warned.output.split())
    assert cli("run", "--suite", "order_management", "--max-cost", "-1").exit_code == 2


def test_the_memo_costs_nothing_so_a_rerun_finishes_within_the_budget(project, tmp_path):
    assert cli("run", "--suite", "order_management").exit_code == 0
    out = tmp_path / "again.json"
    again = cli("run", "--suite", "order_management", "--max-calls", "1", "--json", str(out))
    assert again.exit_code == 0, again.output
    assert run_json(out)["run"]["stopped"] is None


def test_a_budget_stops_the_sequential_gate_between_batches(project, tmp_path):
    """The sequential gate goes on past the smoke tier while undecided; a budget that the
    tier alone spends stops it there: UNDECIDED, naming the budget and how far it went."""
    assert cli("run", "--suite", "order_management", "--label", "production").exit_code == 0
    out = tmp_path / "seq.json"
    gated = cli("run", "--suite", "order_management", "--label", "staging", "--tier", "smoke",
                "--baseline", "production", "--gate", "sequential", "--margin", "0.0",
                "--max-calls", "2", "--json", str(out))  # fmt: skip
    body = run_json(out)
    assert gated.exit_code in (1, 3), gated.output
    if gated.exit_code == 3:  # the tier did not decide it: the budget stopped it there
        assert "further case(s) not started" in body["run"]["stopped"]
        assert any("the budget stopped the run" in u for u in body["undecided"])
        assert body["sequential"].startswith("undecided after 5 of 32 cases")
    assert body["summary"]["n_cases"] == 5  # no batch after the budget was spent


def test_a_budget_with_workers_splits_and_still_completes(project, tmp_path):
    out = tmp_path / "w.json"
    ran = cli("run", "--suite", "order_management", "--workers", "2", "--max-calls", "4",
              "--concurrency", "2", "--json", str(out))  # fmt: skip
    assert ran.exit_code == 3, ran.output
    body = run_json(out)
    assert "items not started" in body["run"]["stopped"] and body["summary"]["n_cases"] < 32
