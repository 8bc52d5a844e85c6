"""The sequential gate's statistics, checked by simulation: with peeking after every pair,
false alarms stay at α; at the margin, "not worse" is said at most α of the time; a real
drop is found, and clear cases stop early.

Each simulation draws RUNS independent runs; a rate's Monte-Carlo standard error is
√(α(1−α)/RUNS) ≈ 0.0049 for α = 0.05 and 2,000 runs, and each bound is checked with three
of them of slack (a true rate of α fails the check with probability ≈ 0.001). The
sequences here use a coarser grid than the gate's (201 points: 0.01 on [−1, 1]) to keep
the file at a few seconds; coarser is more conservative, never less.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from eval_pipeline.core.scoring.sequential import (
    Decision,
    confidence_sequence,
    decide,
    pairs_to_clear,
)

ALPHA = 0.05
RUNS = 2000
SLACK = 3 * math.sqrt(ALPHA * (1 - ALPHA) / RUNS)
GRID = 201


def paired_binary(rng: np.random.Generator, n: int, base: float, cand: float) -> np.ndarray:
    """Paired pass/fail differences (candidate − baseline) in {−1, 0, 1}."""
    return (rng.random(n) < cand).astype(float) - (rng.random(n) < base)


def ever_below(x: np.ndarray, truth: float, alpha: float = ALPHA, **kw) -> bool:
    """Whether the upper bound ever falls below the truth (the way to a false WORSE)."""
    _, upper = confidence_sequence(x, alpha=alpha, lo=-1, hi=1, grid=GRID, **kw)
    return bool(np.any(upper < truth))


def ever_above(x: np.ndarray, truth: float, alpha: float = ALPHA, **kw) -> bool:
    """Whether the lower bound ever exceeds the truth (the way to a false NOT WORSE)."""
    lower, _ = confidence_sequence(x, alpha=alpha, lo=-1, hi=1, grid=GRID, **kw)
    return bool(np.any(lower > truth))


def test_no_difference_false_alarms_stay_below_alpha_peeking_after_every_pair():
    """Under Δ = 0 the upper bound, looked at after every one of 150 pairs, ever falls
    below 0 (the only way to a false WORSE) in at most α of the runs."""
    rng = np.random.default_rng(2025)
    binary = sum(ever_below(paired_binary(rng, 150, 0.7, 0.7), 0.0) for _ in range(RUNS // 2))
    scores = sum(
        ever_below(np.clip(rng.beta(4, 2, 150), 0, 1) - np.clip(rng.beta(4, 2, 150), 0, 1), 0.0)
        for _ in range(RUNS // 2)
    )
    rate = (binary + scores) / RUNS
    assert rate <= ALPHA + SLACK, f"false-alarm rate {rate:.4f} > {ALPHA} + {SLACK:.4f}"


def test_at_the_margin_not_worse_is_said_at_most_alpha_of_the_time():
    """Δ = −m exactly: NOT_WORSE needs the sequence above −m, a miss of the truth."""
    rng = np.random.default_rng(7)
    margin = 0.1
    misses = 0
    for _ in range(RUNS):
        x = -margin + rng.uniform(-0.3, 0.3, 150)  # mean −m, inside [−1, 1]
        lower, _ = confidence_sequence(x, alpha=ALPHA, lo=-1, hi=1, grid=GRID)
        misses += bool(np.any(lower > -margin))
    assert misses / RUNS <= ALPHA + SLACK


def test_three_metrics_keep_the_family_wise_error_at_alpha():
    """Bonferroni on time-uniform sequences: any of three null metrics ever below 0."""
    rng = np.random.default_rng(11)
    runs = RUNS // 2
    alarms = sum(
        any(ever_below(paired_binary(rng, 100, 0.6, 0.6), 0.0, alpha=ALPHA / 3) for _ in "abc")
        for _ in range(runs)
    )
    assert alarms / runs <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)


def test_without_replacement_covers_the_suites_mean_and_is_narrower_at_the_end():
    """Cases drawn in a random order from a suite of 60: the sequence covers the suite's
    own mean at every step (each bound one-sided at α), and near the end it is much
    narrower than the one that
    assumes draws with replacement (at the end it is the mean itself)."""
    rng = np.random.default_rng(3)
    suite = paired_binary(rng, 60, 0.8, 0.7)
    truth = suite.mean()
    misses = 0
    for _ in range(RUNS // 4):
        order = rng.permutation(suite)
        misses += ever_below(order, truth, population=60) or ever_above(order, truth, population=60)
    # each bound one-sided at α: the two together miss at most 2α of the time
    assert misses / (RUNS // 4) <= 2 * ALPHA + 3 * math.sqrt(2 * ALPHA / (RUNS // 4))
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
    """Binary metric, baseline pass rate 0.9, margin 0.1: batches of 5, stop when decided."""
    rng = np.random.default_rng(5)
    margin, found, used = 0.1, 0, []
    for _ in range(200):
        x = paired_binary(rng, at_most, 0.9, 0.9 - drop)
        lower, upper = confidence_sequence(x, alpha=ALPHA, lo=-1, hi=1, grid=GRID)
        for n in range(5, at_most + 1, 5):  # decide()'s rule, after each batch of 5
            worse = upper[n - 1] < 0 and x[:n].mean() <= -margin
            if worse or lower[n - 1] > -margin:
                break
        found += worse
        used.append(n)
    assert found / 200 >= power
    assert np.mean(used) < at_most
    x = paired_binary(rng, at_most, 0.9, 0.9 - drop)  # and decide() itself agrees
    assert decide({"m": x}, margin=margin, alpha=ALPHA)["m"].decision is Decision.WORSE


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
