"""The sequential gate's statistics, checked by simulation: with peeking after every pair,
false alarms stay at α; at the margin, "not worse" is said at most α of the time; a real
drop is found, and clear cases stop early.

Each simulation draws RUNS independent runs; a rate's Monte-Carlo standard error is
√(α(1−α)/RUNS) ≈ 0.0049 for α = 0.05 and 2,000 runs, and each bound is checked with three
of them of slack (a true rate of α fails the check with probability ≈ 0.001). The runs are
judged as ``decide`` judges them: by the test martingales at the points it decides on
(log_wealth, decision_times), all runs at once. That is exact, where reading the reported
confidence sequence off its grid is conservative by a grid step;
test_sequential_validity.py checks the sequence itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from eval_pipeline.core.scoring.sequential import (
    Decision,
    confidence_sequence,
    decide,
    decision_times,
    log_wealth,
    pairs_to_clear,
)

ALPHA = 0.05
RUNS = 2000
SLACK = 3 * math.sqrt(ALPHA * (1 - ALPHA) / RUNS)


def paired_binary(rng: np.random.Generator, n: int, base: float, cand: float,
                  runs: int | None = None) -> np.ndarray:  # fmt: skip
    """Paired pass/fail differences (candidate − baseline) in {−1, 0, 1}: ``n`` of them, or
    ``runs`` rows of ``n``."""
    shape = n if runs is None else (runs, n)
    return (rng.random(shape) < cand).astype(float) - (rng.random(shape) < base)


def ever_ruled_out(x: np.ndarray, mu: float, side: str, alpha: float = ALPHA,
                   **kw) -> np.ndarray:  # fmt: skip
    """Per row of ``x``: whether the mean ``mu`` is ever ruled out, as too high (``side``
    "below": the upper bound falls below it, the way to a false WORSE) or as too low
    ("above": the lower bound exceeds it, the way to a false NOT WORSE)."""
    wealth = log_wealth(x, mu, lo=-1, hi=1, side=side, **kw)
    return np.asarray(wealth.max(axis=-1) >= math.log(1 / alpha))


def test_no_difference_false_alarms_stay_below_alpha_peeking_after_every_pair():
    """Under Δ = 0 the upper bound, looked at after every one of 150 pairs, ever falls
    below 0 (the only way to a false WORSE) in at most α of the runs."""
    rng = np.random.default_rng(2025)
    binary = paired_binary(rng, 150, 0.7, 0.7, runs=RUNS // 2)
    scores = (np.clip(rng.beta(4, 2, (RUNS // 2, 150)), 0, 1)
              - np.clip(rng.beta(4, 2, (RUNS // 2, 150)), 0, 1))  # fmt: skip
    alarms = ever_ruled_out(np.concatenate((binary, scores)), 0.0, "below")
    rate = alarms.sum() / RUNS
    assert rate <= ALPHA + SLACK, f"false-alarm rate {rate:.4f} > {ALPHA} + {SLACK:.4f}"


def test_at_the_margin_not_worse_is_said_at_most_alpha_of_the_time():
    """Δ = −m exactly: NOT_WORSE needs −m ruled out, a miss of the truth."""
    rng = np.random.default_rng(7)
    margin = 0.1
    x = -margin + rng.uniform(-0.3, 0.3, (RUNS, 150))  # mean −m, inside [−1, 1]
    misses = ever_ruled_out(x, -margin, "above").sum()
    assert misses / RUNS <= ALPHA + SLACK


def test_three_metrics_keep_the_family_wise_error_at_alpha():
    """Bonferroni on time-uniform sequences: any of three null metrics ever below 0."""
    rng = np.random.default_rng(11)
    runs = RUNS // 2
    metrics = paired_binary(rng, 100, 0.6, 0.6, runs=3 * runs).reshape(runs, 3, 100)
    alarms = ever_ruled_out(metrics, 0.0, "below", alpha=ALPHA / 3).any(axis=-1).sum()
    assert alarms / runs <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)


def test_without_replacement_covers_the_suites_mean_and_is_narrower_at_the_end():
    """Cases drawn in a random order from a suite of 60: the sequence covers the suite's
    own mean at every step (each bound one-sided at α), and near the end it is much
    narrower than the one that
    assumes draws with replacement (at the end it is the mean itself)."""
    rng = np.random.default_rng(3)
    suite = paired_binary(rng, 60, 0.8, 0.7)
    truth = suite.mean()
    runs = RUNS // 4
    orders = np.array([rng.permutation(suite) for _ in range(runs)])
    misses = (ever_ruled_out(orders, truth, "below", population=60)
              | ever_ruled_out(orders, truth, "above", population=60)).sum()  # fmt: skip
    # each bound one-sided at α: the two together miss at most 2α of the time
    assert misses / runs <= 2 * ALPHA + 3 * math.sqrt(2 * ALPHA / runs)
    order = rng.permutation(suite)
    wor = confidence_sequence(order, alpha=ALPHA, lo=-1, hi=1, population=60)
    wr = confidence_sequence(order, alpha=ALPHA, lo=-1, hi=1)
    assert wor[1][-1] - wor[0][-1] < (wr[1][-1] - wr[0][-1]) / 3
    assert wor[0][-1] <= truth <= wor[1][-1]


@pytest.mark.parametrize(
    ("drop", "at_most", "power"),
    [(0.6, 40, 0.95), (0.2, 300, 0.8)],
    ids=["large drop", "twice the margin"],
)
def test_a_real_drop_is_found_and_a_large_one_quickly(drop, at_most, power):
    """Binary metric, baseline pass rate 0.9, margin 0.1: batches of 5, stop when decided
    (decide()'s rule: the first decision reached, WORSE on a tie, seen at the batch's end)."""
    rng = np.random.default_rng(5)
    margin, runs = 0.1, 200
    x = paired_binary(rng, at_most, 0.9, 0.9 - drop, runs=runs)
    t_nw, t_w = decision_times(x, margin=margin, alpha_not_worse=ALPHA, alpha_worse=ALPHA)
    worse = (t_w <= at_most) & (t_w <= t_nw)
    first = np.minimum(t_nw, t_w)
    used = np.where(first <= at_most, np.ceil(first / 5) * 5, at_most)
    assert worse.sum() / runs >= power
    assert used.mean() < at_most
    one = paired_binary(rng, at_most, 0.9, 0.9 - drop)  # and decide() itself agrees
    assert decide({"m": one}, margin=margin, alpha=ALPHA)["m"].decision is Decision.WORSE


def test_decide_says_what_it_decided_and_what_would_decide_it():
    zeros = decide({"overall": [0.0] * 200}, margin=0.05, alpha=ALPHA)["overall"]
    assert zeros.decision is Decision.NOT_WORSE and zeros.n == zeros.decided_at
    assert zeros.note.endswith(f"not worse; the {200 - zeros.n} pairs after it are no evidence")
    early = decide({"overall": [0.0] * 10}, margin=0.05, alpha=ALPHA)["overall"]
    assert early.decision is Decision.CONTINUE and early.more_to_decide
    assert f"about {early.more_to_decide} more pairs" in early.note
    # the estimate runs the sequence on the pairs so far, repeated: exact for pairs that
    # never differ (the 1/√n extrapolation it replaced said 669 more here, not 106)
    assert early.n + early.more_to_decide == pairs_to_clear(0.05, ALPHA)
    # a suite of 12 cases cannot decide a margin of 0.01: out of reach, said as such
    tight = decide({"overall": [0.0] * 10}, margin=0.01, alpha=ALPHA, population=12)["overall"]
    assert tight.more_to_decide is None
    left = "the whole suite (12 cases) would not decide it at this spread"
    assert f"{left} (not within the 2 more pairs it has left)" in tight.note
    worse = decide({"overall": [-1.0] * 12}, margin=0.05, alpha=ALPHA)["overall"]
    assert worse.decision is Decision.WORSE and worse.upper < 0
    with pytest.raises(ValueError, match="'overall'"):
        decide({"overall": [0.0, float("nan")]}, margin=0.05, alpha=ALPHA)
    with pytest.raises(ValueError, match="outside"):
        confidence_sequence([2.0], alpha=ALPHA, lo=-1, hi=1)
