"""Validity of the sequential gate (core/scoring/sequential.py), by simulation, under
peeking.

Each check draws RUNS runs of up to HORIZON pairs from a distribution on the boundary of a
null (the worst case: Δ = −m exactly for NOT WORSE, Δ = 0 for WORSE) and asks how often the
test martingale *ever* reached its level, i.e. with a look after every single pair (a gate
that looks after batches of 5 sees a subset of these crossings, so this is stricter). A
rate's Monte-Carlo SE is √(a(1−a)/RUNS) at level a; each bound allows 3 SE (a true rate of a
fails with probability ≈ 0.001). Fixed seeds; vectorised; a few seconds in all.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from eval_pipeline.core.scoring import sequential as seq
from eval_pipeline_tests.helpers import benchmark

simulated = benchmark("simulated")  # the simulated suites the benchmarks measure on

ALPHA = 0.05
MARGIN = 0.1
RUNS = 2000
HORIZON = 200


def slack(level: float, runs: int = RUNS) -> float:
    return 3 * math.sqrt(level * (1 - level) / runs)


AT_MARGIN = simulated.at_margin(MARGIN)  # mean exactly −m
AT_ZERO = simulated.AT_ZERO  # mean exactly 0
three_point = simulated.three_point


@pytest.mark.parametrize("name", list(AT_MARGIN))
def test_wrong_not_worse_at_the_margin_is_at_most_alpha(name):
    """Δ = −m: NOT WORSE (K⁺(−m) ever ≥ 1/α, looking after every pair) in ≤ α of runs."""
    rng = np.random.default_rng(1000 + list(AT_MARGIN).index(name))
    x = AT_MARGIN[name](rng, (RUNS, HORIZON))
    t_nw, _ = seq.decision_times(x, margin=MARGIN, alpha_not_worse=ALPHA, alpha_worse=ALPHA)
    rate = float(np.mean(t_nw <= HORIZON))
    assert rate <= ALPHA + slack(ALPHA), f"{name}: wrong NOT WORSE {rate:.4f}"


@pytest.mark.parametrize("name", list(AT_ZERO))
def test_false_worse_at_no_change_is_at_most_its_share(name):
    """Δ = 0, two metrics in the WORSE family (α/2 each): the raw test martingale K⁻(0) ever
    ≥ 2/α (WORSE additionally needs the estimate ≤ −m, so this is stricter) in ≤ α/2."""
    rng = np.random.default_rng(2000 + list(AT_ZERO).index(name))
    x = AT_ZERO[name](rng, (RUNS, HORIZON))
    crossed = (seq.log_wealth(x, 0.0, side="below") >= math.log(2 / ALPHA)).any(axis=1)
    rate = float(np.mean(crossed))
    assert rate <= ALPHA / 2 + slack(ALPHA / 2), f"{name}: false WORSE {rate:.4f}"


def test_three_metrics_keep_the_family_wise_worse_error_at_alpha():
    """Three correlated metrics, none changed (a shared latent difficulty and a shared
    per-answer quality): any metric's K⁻ ever ≥ 3/α in ≤ α of runs (Bonferroni over
    time-uniform events)."""
    runs = RUNS // 2
    d = simulated.suite(np.random.default_rng(7), runs, HORIZON, simulated.FAMILIES[3], tau=0.8)
    crossed = (seq.log_wealth(d, 0.0, side="below") >= math.log(3 / ALPHA)).any(axis=-1)
    rate = float(crossed.any(axis=0).mean())
    assert rate <= ALPHA + slack(ALPHA, runs), f"family-wise false WORSE {rate:.4f}"


def test_pass_is_wrong_at_most_alpha_when_one_metric_is_worse_by_the_margin():
    """Intersection–union: metric A at Δ = −m, metric B clearly better; PASS (both NOT WORSE,
    each at the full α) in ≤ α of runs."""
    rng = np.random.default_rng(8)
    a = three_point(0.05 + MARGIN, 0.05)(rng, (RUNS, HORIZON))
    b = three_point(0.02, 0.25)(rng, (RUNS, HORIZON))
    t_a, _ = seq.decision_times(a, margin=MARGIN, alpha_not_worse=ALPHA, alpha_worse=ALPHA / 2)
    t_b, _ = seq.decision_times(b, margin=MARGIN, alpha_not_worse=ALPHA, alpha_worse=ALPHA / 2)
    rate = float(np.mean((t_a <= HORIZON) & (t_b <= HORIZON)))
    assert np.mean(t_b <= HORIZON) > 0.99  # (B alone passes)
    assert rate <= ALPHA + slack(ALPHA), f"wrong PASS {rate:.4f}"


def test_confidence_sequence_covers_the_mean_at_every_time():
    """Each one-sided bound of ``confidence_sequence`` (grid) misses the mean, ever, ≤ α."""
    rng = np.random.default_rng(9)
    runs, n = 300, 80
    low_miss = high_miss = 0
    for _ in range(runs):
        x = three_point(0.15, 0.1)(rng, n)  # mean −0.05
        lower, upper = seq.confidence_sequence(x, alpha=ALPHA, lo=-1, hi=1, grid=201)
        low_miss += bool(np.any(lower >= -0.05))
        high_miss += bool(np.any(upper <= -0.05))
    assert low_miss / runs <= ALPHA + slack(ALPHA, runs)
    assert high_miss / runs <= ALPHA + slack(ALPHA, runs)


def test_without_replacement_covers_the_suites_own_mean():
    rng = np.random.default_rng(3)
    values = three_point(0.2, 0.1)(rng, 60)
    truth, runs, miss = values.mean(), 300, 0
    for _ in range(runs):
        order = rng.permutation(values)
        lower, upper = seq.confidence_sequence(order, alpha=ALPHA, lo=-1, hi=1, population=60,
                                               grid=201)  # fmt: skip
        miss += bool(np.any(lower >= truth) or np.any(upper <= truth))
    assert miss / runs <= 2 * ALPHA + slack(2 * ALPHA, runs)
    assert upper[-1] - lower[-1] < 0.05  # at the end, the suite's mean itself (± a step)


def test_decisions_and_bounds_never_disagree():
    """decide(): NOT WORSE ⇔ lower ≥ −m; WORSE ⇒ upper ≤ 0 and estimate ≤ −m; and the
    decision is the one the vectorised core finds first."""
    rng = np.random.default_rng(10)
    for i in range(150):
        p_down, p_up = rng.uniform(0, 0.3), rng.uniform(0, 0.3)
        x = three_point(p_down, p_up)(rng, int(rng.integers(5, 120)))
        said = seq.decide({"m": x}, margin=MARGIN, alpha_not_worse=ALPHA,
                          alpha_worse=ALPHA, family=2, look_ahead=False)["m"]  # fmt: skip
        t_nw, t_w = seq.decision_times(x, margin=MARGIN, alpha_not_worse=ALPHA,
                                       alpha_worse=ALPHA / 2)  # fmt: skip
        if said.decision is seq.Decision.NOT_WORSE:
            assert said.lower >= -MARGIN and said.decided_at == t_nw < t_w, i
        elif said.decision is seq.Decision.WORSE:
            assert said.upper <= 0 and said.decided_at == t_w <= t_nw, i
        else:
            assert said.lower < -MARGIN and min(t_nw, t_w) > len(x), i


def test_what_tied_cases_can_do_is_exact():
    for margin in (0.1, 0.05, 0.02):
        n = seq.pairs_to_clear(margin, ALPHA)
        assert seq.floor_pairs(margin, ALPHA) <= n <= 1.3 * seq.floor_pairs(margin, ALPHA)
        said = seq.decide({"m": [0.0] * n}, margin=margin, alpha=ALPHA, look_ahead=False)["m"]
        assert said.decision is seq.Decision.NOT_WORSE and said.lower >= -margin
        early = seq.decide({"m": [0.0] * 5}, margin=margin, alpha=ALPHA)["m"]
        assert early.n + early.more_to_decide == n  # the look-ahead is exact for ties
    fine = seq.finest_margin(50, ALPHA)
    assert seq.floor_margin(50, ALPHA) < fine
    assert seq.decide({"m": [0.0] * 50}, margin=fine + 1e-9, alpha=ALPHA)["m"].decided
    assert not seq.decide({"m": [0.0] * 50}, margin=fine - 1e-3, alpha=ALPHA)["m"].decided


def test_detectable_drop_is_the_exact_power():
    """The dynamic programme behind ``detectable_drop`` agrees with a simulation."""
    rng = np.random.default_rng(12)
    p = (0.25, 0.05)
    exact = seq._worse_probability(50, p, MARGIN, ALPHA, ALPHA / 2)
    x = three_point(*p)(rng, (8000, 50))
    t_nw, t_w = seq.decision_times(x, margin=MARGIN, alpha_not_worse=ALPHA, alpha_worse=ALPHA / 2)
    simulated = float(np.mean((t_w <= 50) & (t_w <= t_nw)))
    assert abs(simulated - exact) <= 3 * math.sqrt(exact * (1 - exact) / 8000)


def test_a_tier_the_candidate_was_tuned_on_cannot_carry_the_decision():
    """A suite of 200 cases worse by exactly the margin, whose 20 smoke cases the candidate
    was tuned on (better on 10 of them, tied on the rest). With the tier first, then the
    suite in a seeded random order (the old gate), the tier's pairs lifted the early
    estimate and NOT WORSE came far more often than α; the gate now draws its pairs in the
    seeded order over the whole suite, the tier counting where the draw reaches it, and a
    wrong NOT WORSE stays at α (core/evaluation/plan.py ``drawn_prefix``)."""
    rng = np.random.default_rng(2026)
    tier = np.array([1.0] * 10 + [0.0] * 10)
    rest = np.array([-1.0] * 30 + [0.0] * 150)  # the suite's mean: (10 − 30)/200 = −0.1
    runs = 2000
    orders = np.array([rng.permutation(200) for _ in range(runs)])
    suite = np.concatenate((tier, rest))
    drawn = suite[orders]  # the new gate: the whole suite in the seeded order
    tier_first = np.concatenate(
        (np.broadcast_to(tier, (runs, 20)), rest[np.argsort(rng.random((runs, 180)))]), axis=1
    )  # the old gate: the tier, then the others
    wrong = {}
    for name, paths in (("drawn", drawn), ("tier first", tier_first)):
        t_nw, t_w = seq.decision_times(paths, margin=MARGIN, alpha_not_worse=ALPHA,
                                       alpha_worse=ALPHA)  # fmt: skip
        looked = ((t_nw + 4) // 5) * 5  # the gate looks after every batch of 5
        wrong[name] = float(np.mean((t_nw <= 200) & (looked <= 200) & (t_nw < t_w)))
    assert wrong["drawn"] <= ALPHA + slack(ALPHA, runs), wrong
    assert wrong["tier first"] > ALPHA + slack(ALPHA, runs), wrong


@pytest.mark.parametrize("tuned", [20, 40, 60])
def test_a_prompt_fixed_on_the_first_cases_drawn_meets_a_draw_of_its_own(tuned):
    """A team reads which cases its last candidate's gate looked at first (the report
    lists them) and fixes the next prompt on the first 20 / 40 / 60 of them; over the
    200-case suite it is worse by exactly the margin. Seeded by the dataset alone, every
    candidate met the same order, the fixed cases came first (tied pairs), and it passed
    in 21 / 100 / 100% of runs here (the issue's model, with misses in the fixed cases
    too: 19 / 33 / 42%). Each candidate's draw is seeded by what makes it the agent it is
    (``draw_order``), so the cases it was fixed on land anywhere in its own draw: a wrong
    PASS at α (benchmarks/gate_validity.py ``prefix_tuned_passes``)."""
    runs = 1000
    passed = benchmark("gate_validity").prefix_tuned_passes(tuned, runs, seed=tuned)
    assert passed <= ALPHA + slack(ALPHA, runs), passed
