"""The sequential gate's continuation: while a gated metric is undecided, more of the
suite's cases, in batches, in the seeded draw order; once the cases left look too few to
decide, the cases the baseline found flaky get repeats."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eval_pipeline.core.evaluation.baseline import decided_baseline
from eval_pipeline.core.evaluation.plan import RunPlan, cases_run, draw_order
from eval_pipeline.core.evaluation.result import EvalResult, SequentialReport
from eval_pipeline.core.evaluation.stages import produce, score, summarise, verdict
from eval_pipeline.core.options import RunOptions
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.running.budget import Budget, Spending
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import Progress
from eval_pipeline.core.scoring.reducers import repeat_values
from eval_pipeline.core.store.records import RunRecord
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.core.suites.cases import GoldenCase

MIN_BATCH = 5  # a sequential run's further cases come at least this many at a time


def go_on_until_decided(
    store: ResultsStore, plan_: RunPlan, agent: Callable[[], Agent], result: EvalResult, *,
    prices: PriceTable | None = None, progress: Progress | None = None,
) -> EvalResult:  # fmt: skip
    """The sequential gate: while a gated metric is undecided (``goes_on``), run
    the suite's further cases, in batches (as many as the tier has, at least MIN_BATCH),
    in ``draw_order``, and decide again; stop when decided, or when the budget or the
    cases the baseline has run out. Once the cases left look too few to decide
    (``runs_short``), each further case the baseline found flaky is run ``max_repeats``
    times (``Repeats``). The result says after how many cases and model calls. ``agent``
    builds the agent, once, when the first further case runs."""
    run_id, suite = plan_.run.run_id, plan_.suite
    baseline, _ = decided_baseline(store, result.run)  # as stored (a step may plan again)
    cases = list(result.cases)  # the tier's, less any a budget left unstarted
    if baseline is None:  # no gate: nothing to decide
        return result
    paired = {o.item_id for o in store.read_outputs(baseline.run_id)}
    done = {c.id for c in [*plan_.cases, *cases]}
    rest = draw_order(plan_.all_cases.with_ids(  # (each made a GoldenCase as it runs)
        lambda case_id: case_id not in done and case_id in paired), plan_.run)
    size = max(MIN_BATCH, len(cases))
    repeats = Repeats.planned(store, baseline, plan_)
    budget = Budget.of(plan_.request)
    built: list[Agent] = []
    while goes_on(result, plan_.request) and rest:
        if reached := budget.reached(Spending.of_run(result.outputs, result.scores)):
            store.stop_run(run_id, f"{reached}: {len(rest)} further case(s) not started")
            result.run = store.get_run(run_id) or result.run
            break
        more = repeats.of(rest[:size]) if runs_short(result, len(rest)) else {}
        batch, rest = list(rest[:size]), rest[size:]
        built = built or [agent()]
        produce(store, dataclasses.replace(plan_, cases=batch, repeats_of=more), built[0],
                prices=prices, progress=progress, batch=True)  # fmt: skip
        batch = cases_run(store, run_id, batch)
        score(store, run_id, suite, batch, prices=prices, batch=True)
        cases += batch
        summary = summarise(store, run_id, suite, cases)
        result = verdict(store, store.get_run(run_id) or plan_.run, suite, cases, summary,
                         plan_.all_cases, explain=False)  # fmt: skip
    if result.gate is not None:  # what an undecided metric learned, for the verdict reported
        result.gate = result.gate.explained()
    answers = Counter(o.item_id for o in result.outputs)  # (what ran: a budget may stop)
    result.sequential = SequentialReport(
        cases=len(cases), suite_cases=len(plan_.all_cases), decided=not result.undecided,
        model_calls=Spending.of_run(result.outputs, result.scores).calls,
        repeated=tuple(c.id for c in cases if answers[c.id] > plan_.runner.repeats),
        repeats=repeats.most, repeats_note=repeats.note, paired=_paired(result),
    )  # fmt: skip
    return result


def _paired(result: EvalResult) -> int | None:
    """How many pairs the gate decided on (its draw-order prefix), when it compared."""
    inputs = result.gate.inputs if result.gate is not None else None
    return len(inputs.order) if inputs is not None and inputs.order is not None else None


@dataclass(frozen=True)
class Repeats:
    """Variance-aware repeats of a sequential run: the cases its baseline found flaky (their
    repeats disagree on a gated metric) are run ``most`` times instead of the run's
    repeats, once the run ``runs_short``. Where the paired difference is noisy, more
    answers narrow it; elsewhere they would only cost. The choice is made from the
    baseline, and before the case runs: choosing by the candidate's own answers (another
    repeat where it failed, or disagreed with itself) would bias its per-case means, and
    the gate with them. ``flaky`` empty: no repeats, and ``note`` says why."""

    flaky: frozenset[str]
    most: int
    note: str = ""

    @classmethod
    def planned(cls, store: ResultsStore, baseline: RunRecord, plan_: RunPlan) -> Repeats:
        """``max_repeats`` (default: as many as the baseline ran each case) for the cases
        the baseline's repeats disagree on."""
        asked, repeats = plan_.request.max_repeats, plan_.runner.repeats
        if asked is not None and asked <= repeats:  # turned off
            return cls(frozenset(), repeats)
        if baseline.repeats < 2:
            return cls(frozenset(), repeats, "the baseline ran each case once: nothing says "
                       "which cases are flaky (record it with --repeat 3)")  # fmt: skip
        most = asked or baseline.repeats
        if most <= repeats:
            return cls(frozenset(), repeats, f"the run gives each case as many answers as "
                       f"the baseline did ({baseline.repeats}); --max-repeats above that "
                       "repeats its flaky cases")  # fmt: skip
        if plan_.suite.thresholds.regression.reducer != "mean":
            return cls(frozenset(), repeats, "the reducer is not mean: a case with more "
                       "repeats would be measured differently")  # fmt: skip
        scores = store.read_scores(baseline.run_id)
        metrics = plan_.suite.thresholds.gated_metrics
        values = {m: repeat_values(scores, m) for m in metrics}
        flaky = frozenset(item for m in metrics for item, v in values[m].items() if len(set(v)) > 1)
        why = "" if flaky else "the baseline's repeats agree on every case"
        return cls(flaky, most, why)

    def of(self, cases: Sequence[GoldenCase]) -> dict[str, int]:
        """How often each of ``cases`` runs when it is not the run's repeats."""
        return {c.id: self.most for c in cases if c.id in self.flaky}


def runs_short(result: EvalResult, left: int) -> bool:
    """Whether the cases ``left`` look too few to decide: for an undecided gated metric,
    the gate's guess of the pairs that would decide it exceeds them, or it cannot guess."""
    return any(row.cases_needed is None or row.cases_needed - row.n > left
               for row in result.undecided_rows)  # fmt: skip


def goes_on(result: EvalResult, request: RunOptions) -> bool:
    """Whether a sequential run draws more cases: its gate is undecided, nothing it could
    not measure, and nothing failed (under ``sequential_until="decided"``, only the gate's
    own failures count: a failed threshold does not decide the gate)."""
    failed = result.failed
    if request.sequential_until == "decided":
        thresholds = {c.name for c in result.checks}
        failed = [name for name in failed if name not in thresholds]
    return bool(result.undecided) and not failed and not result.errors
