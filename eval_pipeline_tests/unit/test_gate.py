"""core/gate.py on constructed runs: baselines, comparability, missing items, each check."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from eval_pipeline.core.scoring.gate import NotComparable, compare_runs
from eval_pipeline.core.scoring.summary import Summary
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.baselines import find_baseline
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord, RunStatus
from eval_pipeline.core.store.results_store import ResultsStore

THRESHOLDS = Thresholds.model_validate(
    {
        "primary_metric": "quality",
        "min_mean": {"quality": 0.5},
        "all_items_pass": ["safe"],
        "regression": {"max_latency_ratio": 1.5},
    }
)
ITEMS = [f"i{n:02d}" for n in range(30)]
CATEGORIES = {i: "a" if n < 15 else "b" for n, i in enumerate(ITEMS)}


def record(run_id: str, version: str = "v1", minutes: int = 0, **fields) -> RunRecord:
    base = {
        "suite": "s",
        "prompt_name": "p",
        "prompt_version": version,
        "prompt_hash": "h",
        "dataset_version": "d1",
        "model": "m",
        "tier": "full",
        "evaluator_versions": {"quality": "1", "safe": "1"},
        "status": "complete",
        "started_at": datetime(2026, 11, 20, tzinfo=UTC) + timedelta(minutes=minutes),
    }
    return RunRecord(run_id=run_id, **{**base, **fields})


def data(quality: dict[str, float], safe_fail=(), latency=100.0, items=ITEMS):
    outputs = [ItemOutput(i, 0, {}, latency_ms=latency) for i in items]
    scores = [ItemScore(i, 0, "quality", quality.get(i, 1.0)) for i in items]
    scores += [ItemScore(i, 0, "safe", 0.0 if i in safe_fail else 1.0) for i in items]
    return outputs, scores


def checks(report):
    return {c.name: c for c in report.checks}


def test_identical_runs_pass_everything():
    report = compare_runs(record("b"), record("c"), data({}), data({}), THRESHOLDS, CATEGORIES)
    assert report.outcome == "pass" and report.comparable


def test_a_real_drop_fails_and_lists_the_worse_items():
    worse = {i: 0.5 for i in ITEMS[:12]}
    report = compare_runs(record("b"), record("c"), data({}), data(worse), THRESHOLDS, CATEGORIES)
    found = checks(report)
    assert found["paired_gate"].outcome == "fail" and found["paired_gate"].blocking_failure
    assert [w.item_id for w in found["paired_gate"].worse_items][:3] == ITEMS[:3]
    assert (
        found["category_deltas"].outcome == "warn"
        and "a (Δ" in found["category_deltas"].description
    )
    assert not found["category_deltas"].blocking_failure


def test_mcnemar_and_latency_ratio():
    report = compare_runs(
        record("b"),
        record("c"),
        data({}),
        data({}, safe_fail=ITEMS[:8], latency=300.0),
        THRESHOLDS,
        CATEGORIES,
    )
    found = checks(report)
    assert found["binary_gate"].outcome == "fail"
    assert found["binary_gate"].rows[0].newly_failing == 8
    assert found["cost_latency"].outcome == "fail"  # ×3 > max 1.5 with confidence
    latency = next(r for r in found["cost_latency"].rows if r.metric == "latency")
    assert latency.ratio == pytest.approx(3.0)


def test_missing_scores_are_never_zeros():
    """Scores lost for 10 items: the pairs are left out, never counted as 0 (a baseline
    with missing scores once let a candidate 25% worse pass); the gate says it cannot
    decide on them (the verdict is ERROR)."""
    outputs, scores = data({})
    kept = [s for s in scores if s.item_id not in ITEMS[:10]]
    report = compare_runs(
        record("b"), record("c"), data({}), (outputs, kept), THRESHOLDS, CATEGORIES
    )
    paired = checks(report)["paired_gate"]
    assert paired.errors and "10 of 30 pairs lack a score" in paired.errors[0]
    assert all(r.n == 20 for r in paired.rows)


def test_not_comparable_reasons():
    for candidate, message in [
        (record("c", dataset_version="d2"), "dataset changed"),
        (record("c", evaluator_versions={"quality": "2", "safe": "1"}), "quality 1 → 2"),
    ]:
        with pytest.raises(NotComparable, match=message):
            compare_runs(record("b"), candidate, data({}), data({}), THRESHOLDS, CATEGORIES)
    with pytest.raises(NotComparable, match="not in the baseline"):
        compare_runs(
            record("b"), record("c"), data({}, items=ITEMS[:5]), data({}), THRESHOLDS, CATEGORIES
        )


def test_baseline_is_the_latest_full_run_or_the_previous_one_of_the_same_version(tmp_path):
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    for run in (
        record("old", minutes=0),
        record("new", minutes=10),
        record("smoke", minutes=20, tier="smoke"),
    ):
        store.create_run(run)
        store.write_outputs(run.run_id, data({})[0])
        store.write_summary(run.run_id, Summary(0, 0, 0, 0, metrics={}))
        store.settle_run(run.run_id, RunStatus.COMPLETE)
    candidate = record("cand", version="v2", minutes=30)
    assert find_baseline(store, candidate, "v1").run_id == "new"
    nightly = record("nightly", version="v1", minutes=15)
    assert find_baseline(store, nightly, "v1").run_id == "new"
    earlier = record("early", version="v1", minutes=5)
    assert find_baseline(store, earlier, "v1").run_id == "old"
    assert find_baseline(store, candidate, "v9") is None


def test_a_boolean_gated_metric_is_compared_by_mcnemar():
    """An evaluator that declares BOOLEAN scores (pass/fail): the fixed gate's p-value for
    it is McNemar's exact test on the items that flipped, not a t-test on 0/1 values;
    the interval and the margin rule stay. Before, BOOLEAN went through the t-test."""
    from eval_pipeline.core.scoring.stats import mcnemar_exact

    def as_boolean(runs):
        outputs, scores = runs
        return outputs, [ItemScore(s.item_id, s.repeat, s.evaluator, s.value, data_type="BOOLEAN")
                         if s.evaluator == "quality" else s for s in scores]  # fmt: skip

    failing = dict.fromkeys(ITEMS[:8], 0.0)
    report = compare_runs(record("b"), record("c"), as_boolean(data({})),
                          as_boolean(data(failing)), THRESHOLDS, CATEGORIES)  # fmt: skip
    row = next(r for r in checks(report)["paired_gate"].rows if r.metric == "quality")
    assert row.p_value == pytest.approx(mcnemar_exact([True] * 30, [False] * 8 + [True] * 22),
                                        rel=1e-3)  # fmt: skip
    assert "McNemar" in row.note and row.outcome == "fail"
    plain = compare_runs(record("b"), record("c"), data({}), data(failing), THRESHOLDS,
                         CATEGORIES)  # fmt: skip
    numeric = next(r for r in checks(plain)["paired_gate"].rows if r.metric == "quality")
    assert "McNemar" not in numeric.note and numeric.p_value != row.p_value


@pytest.mark.slow  # Monte-Carlo of 400 gated runs
def test_the_sequential_gate_holds_its_error_rate_for_an_agent_that_samples():
    """A sampling agent: each case has its own pass probability, each run answers once, and
    the candidate passes every case 0.1 less often (Δ = −margin, so NOT WORSE is wrong).
    The gate treats each pair as a random draw; when it treated the pairs as the suite's
    fixed values (draws without replacement), 100 cases made the wrong NOT WORSE about
    37% likely at α = 5%. Monte-Carlo: 400 runs, each judged on all 100 pairs (its lower
    bound never falls, so a NOT WORSE at any look shows at the end)."""
    import numpy as np

    from eval_pipeline.core.scoring.gate import Sequential

    gated = Thresholds.model_validate({"primary_metric": "quality"})
    items = [f"c{n:03d}" for n in range(100)]
    rng = np.random.default_rng(7)
    chance = rng.choice([0.5, 0.8, 0.95], size=len(items))  # each case's own pass rate
    runs, wrong = 400, 0
    for _ in range(runs):
        base = dict(zip(items, (rng.random(len(items)) < chance).astype(float), strict=True))
        cand = dict(zip(items, (rng.random(len(items)) < chance - 0.1).astype(float),
                        strict=True))  # fmt: skip
        report = compare_runs(record("b"), record("c", agent_version="2"),
                              data(base, items=items), data(cand, items=items), gated,
                              dict.fromkeys(items, "a"), margin=0.1,
                              sequential=Sequential(items))  # fmt: skip
        row = checks(report)["paired_gate"].rows[0]
        wrong += row.outcome == "pass"
    se = (0.05 * 0.95 / runs) ** 0.5
    assert wrong / runs <= 0.05 + 3 * se, f"wrong NOT WORSE in {wrong} of {runs} runs"


def test_the_fixed_gate_never_passes_on_a_spread_of_zero_at_small_n():
    """Five pairs that all tie have an estimated spread of 0: the t interval was a point
    and passed (a drop of the margin slipped through in 29–37% of runs at n = 5). The
    fixed gate passes only what the anytime-valid bound backs, whatever n: five ties show
    "not worse by more than 0.45", not by the margin."""
    five = ITEMS[:5]
    report = compare_runs(record("b"), record("c", prompt_hash="other"), data({}, items=five),
                          data({}, items=five), THRESHOLDS, CATEGORIES)  # fmt: skip
    paired = checks(report)["paired_gate"]
    assert paired.outcome == "warn" and paired.undecided
    assert "anytime-valid bound" in paired.rows[0].note


def test_a_fixed_gate_on_a_tier_may_fail_never_pass():
    """A hand-picked tier (the smoke cases a team iterates its prompt on) can fail a
    candidate on the fixed gate, never pass it."""
    for tier, said in (("full", "pass"), ("smoke", "warn")):  # (30 ties decide a margin of 0.15)
        report = compare_runs(record("b"), record("c", tier=tier, prompt_hash="other"),
                              data({}), data({}), THRESHOLDS, CATEGORIES, margin=0.15)  # fmt: skip
        assert checks(report)["paired_gate"].outcome == said, tier
    assert "never pass it" in checks(report)["paired_gate"].rows[0].note


def test_a_pass_fail_metric_that_drops_a_little_is_not_a_pass():
    """A safety metric going from 100% to 98% with a margin of 0.01 (one case in 50): the
    binary gate tested harm only (McNemar: not significant, a WARN, the verdict PASS).
    Now the sequential gate decides pass/fail metrics for non-inferiority like the others:
    it cannot call it not worse."""
    from eval_pipeline.core.scoring.gate import Sequential

    items = [f"s{n:02d}" for n in range(50)]
    thresholds = Thresholds.model_validate({
        "primary_metric": "quality", "regression": {"margin": 0.01, "binary_metrics": ["safe"]},
    })  # fmt: skip
    report = compare_runs(record("b"), record("c", prompt_hash="other"),
                          data({}, items=items), data({}, safe_fail=items[:1], items=items),
                          thresholds, {}, sequential=Sequential(items))  # fmt: skip
    paired = checks(report)["paired_gate"]
    safe = next(r for r in paired.rows if r.metric == "safe")
    assert safe.outcome != "pass" and paired.outcome != "pass"
    assert not checks(report)["binary_gate"].tested  # (decided in paired_gate instead)


def test_unequal_repeats_under_a_non_mean_reducer_are_not_comparable():
    thresholds = THRESHOLDS.model_copy(update={"regression": THRESHOLDS.regression.model_copy(
        update={"reducer": "pass_at_k"})})  # fmt: skip
    with pytest.raises(NotComparable, match="pass_at_k"):
        compare_runs(record("b", repeats=1), record("c", repeats=3), data({}), data({}),
                     thresholds, CATEGORIES)  # fmt: skip


def test_an_agent_whose_version_cannot_be_known_is_never_unchanged():
    """An HTTP service without ``version:`` can change behind the same fingerprint: its
    identical outputs are evidence for the statistics, never UNCHANGED."""
    from eval_pipeline.core.scoring.gate import unchanged

    outputs = data({})[0]
    assert unchanged(record("b"), record("c"), outputs, outputs)
    assert not unchanged(record("b", agent_versioned=False), record("c", agent_versioned=False),
                         outputs, outputs)  # fmt: skip
    assert not unchanged(record("b"), record("c"), outputs, outputs[:5])  # a tier alone


def test_the_agents_fingerprint_covers_its_installed_dependencies():
    from eval_pipeline.agents.project import load_project
    from eval_pipeline.core.running.memo import installed_fingerprint
    from eval_pipeline_tests.helpers import PROJECT

    suite = load_project(PROJECT).suite("drive_thru")
    assert suite.code_version.endswith(f"+{installed_fingerprint()}")


def test_the_gates_numbers_are_rounded_once():
    """Δ −0.50851 was kept as round(Δ, 4) = −0.5085 and shown to 3 places as −0.508: rows
    keep the exact numbers, and every view rounds them once (−0.509)."""
    from eval_pipeline.core.reports.exports import _gate_section
    from eval_pipeline.core.reports.result_file import GateCheckResult, GateResult
    from eval_pipeline.core.scoring.gate import Sequential

    gated = Thresholds.model_validate({"primary_metric": "quality"})
    dropped = data(dict.fromkeys(ITEMS, 0.49149))
    for sequential in (Sequential(ITEMS, suite_size=len(ITEMS)), None):
        report = compare_runs(record("b"), record("c", agent_version="2"), data({}), dropped,
                              gated, CATEGORIES, sequential=sequential)  # fmt: skip
        paired = checks(report)["paired_gate"]
        row = paired.rows[0]
        assert row.delta == pytest.approx(-0.50851, abs=1e-9), row.delta
        assert "Δ -0.509" in paired.description and "-0.508" not in paired.description
        assert GateCheckResult.of(paired).numbers()["quality Δ"] == -0.509
        assert "| -0.509 |" in "\n".join(_gate_section(GateResult.of(report)))


def test_the_look_ahead_never_counts_past_the_suite():
    """The gate's pairs are draws with replacement to its tests, but a suite of N cases
    gives N pairs at most: "about 144 more pairs (174 in all)" on a 47-case suite sat next
    to "the whole suite cannot decide". More pairs than the suite has left are never
    promised; when the rest of the suite would not decide, the note says so, as ``learned``
    does, and the row has no cases needed."""
    from eval_pipeline.core.scoring.gate import Sequential

    gated = Thresholds.model_validate({"primary_metric": "quality"})
    tied = data({})
    left = ("the whole suite (30 cases) would not decide it at this spread (not within the "
            "20 more pairs it has left)")  # fmt: skip
    drawn_all = "the whole suite (30 cases) is paired and cannot decide it"
    for drawn, said in ((ITEMS[:10], left), (ITEMS, drawn_all)):
        report = compare_runs(record("b"), record("c", agent_version="2"), tied, tied, gated,
                              CATEGORIES, margin=0.02,
                              sequential=Sequential(drawn, suite_size=len(ITEMS)))  # fmt: skip
        paired = checks(report)["paired_gate"]
        row = paired.rows[0]
        assert row.outcome == "warn" and row.cases_needed is None, row
        assert said in row.note and "more pairs (" not in row.note, row.note
        assert "the whole suite (30 cases) cannot decide a margin of 0.02" in row.learned
    # within the suite: the number is given (22 tied pairs decide a margin of 0.15)
    report = compare_runs(record("b"), record("c", agent_version="2"), tied, tied, gated,
                          CATEGORIES, margin=0.15,
                          sequential=Sequential(ITEMS[:10], suite_size=len(ITEMS)))  # fmt: skip
    row = checks(report)["paired_gate"].rows[0]
    assert row.cases_needed == 22 and "about 12 more pairs (22 in all)" in row.note


def test_a_decided_category_shows_no_cases_needed():
    """Category a, 12 of its 15 cases half as good, is decided worse: it needs no more
    cases (Dagster's metadata said "a cases needed in all 3314" beside it)."""
    from eval_pipeline.core.reports.result_file import GateCheckResult

    worse = {i: 0.5 for i in ITEMS[:12]}
    report = compare_runs(record("b"), record("c"), data({}), data(worse), THRESHOLDS, CATEGORIES)
    categories = checks(report)["category_deltas"]
    row = next(r for r in categories.rows if r.category == "a")
    assert categories.outcome == "warn" and row.decision == "fail"
    assert row.cases_needed is None
    assert not any("cases needed" in k for k in GateCheckResult.of(categories).numbers())


def test_the_gates_word_is_a_verdicts_word():
    """eval_summary's ``gate`` metadata said GateReport.outcome: "warn" for a gate that
    could not tell. It says the gate's verdict in the verdict's words."""
    from eval_pipeline.core.evaluation import EvalResult

    def said(report, outputs, scores):
        summary = Summary(0, 0, 0, 0, metrics={})
        return EvalResult(record("c"), summary, [], THRESHOLDS, outputs, scores,
                          gate=report).gate_verdict  # fmt: skip

    worse = data({i: 0.5 for i in ITEMS[:12]})
    fails = compare_runs(record("b"), record("c"), data({}), worse, THRESHOLDS, CATEGORIES)
    five = ITEMS[:5]
    tied = data({}, items=five)
    cannot = compare_runs(record("b"), record("c", prompt_hash="other"), tied, tied,
                          THRESHOLDS, CATEGORIES)  # fmt: skip
    assert fails.outcome == "fail" and cannot.outcome == "warn"
    assert said(fails, *worse) == "FAIL" and said(cannot, *tied) == "UNDECIDED"
    same = compare_runs(record("b"), record("c"), data({}), data({}), THRESHOLDS, CATEGORIES)
    assert said(same, *data({})) == "PASS" and said(None, *data({})) is None


def test_the_installed_fingerprint_is_every_distributions_name_and_version():
    """Read from the metadata's headers alone (the bodies, READMEs, cost every run ~0.3 s
    to parse): the same names and versions as importlib.metadata's full parse, so the
    code_version and the memo keys of existing stores stay as they were."""
    import hashlib
    import importlib.metadata

    from eval_pipeline.core.running.memo import installed_fingerprint

    full = sorted({f"{(d.metadata['Name'] or '').lower()}=={d.version}"
                   for d in importlib.metadata.distributions()})  # fmt: skip
    assert installed_fingerprint() == hashlib.sha256("\n".join(full).encode()).hexdigest()[:8]
