"""core/stats.py against scipy on random and edge-case data, and the decision rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy import stats

from eval_pipeline.core.scoring.stats import (
    compare_paired,
    holm,
    mcnemar_exact,
    mean_se,
    welch_less,
    wilson_interval,
)

RNG = np.random.default_rng(20261122)


@given(
    st.floats(0, 1), st.floats(0, 0.5), st.integers(2, 400),
    st.floats(0, 1), st.floats(0, 0.5), st.integers(2, 400),
)  # fmt: skip
def test_welch_less_is_scipys_one_sided_welch_test(mean, sd, n, other_mean, other_sd, other_n):
    assume(sd > 1e-6 or other_sd > 1e-6)  # (both zero: the daily check decides without it)
    expected = stats.ttest_ind_from_stats(mean, sd, n, other_mean, other_sd, other_n,
                                          equal_var=False, alternative="less").pvalue  # fmt: skip
    assert welch_less(mean, sd, n, other_mean, other_sd, other_n) == pytest.approx(
        expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n", [5, 10, 47, 500])
def test_paired_matches_scipy_on_random_data(n):
    base = RNG.uniform(0, 1, n)
    cand = np.clip(base + RNG.normal(-0.03, 0.1, n), 0, 1)
    result = compare_paired(base, cand, alpha=0.05)
    d = cand - base
    assert result.delta == pytest.approx(d.mean())
    assert result.se == pytest.approx(stats.sem(d))
    expected_p = stats.ttest_rel(cand, base, alternative="less").pvalue
    assert result.p_value == pytest.approx(expected_p, rel=1e-9)
    low, high = stats.t.interval(0.90, n - 1, loc=d.mean(), scale=stats.sem(d))
    assert (result.ci_low, result.ci_high) == (pytest.approx(low), pytest.approx(high))
    t_a, t_p = stats.t.ppf(0.95, n - 1), stats.t.ppf(0.8, n - 1)
    assert result.mde == pytest.approx((t_a + t_p) * stats.sem(d))


def test_ties_and_discrete_scores_match_scipy():
    base = np.array([1, 1, 0, 1, 0.5, 1, 1, 0, 1, 1], dtype=float)
    cand = np.array([1, 0, 0, 1, 0.5, 0, 1, 0, 1, 1], dtype=float)
    result = compare_paired(base, cand)
    assert result.p_value == pytest.approx(stats.ttest_rel(cand, base, alternative="less").pvalue)


def test_all_equal_differences_use_the_sign_test():
    """No spread for a t-test: every item moved by the same amount. The p-value is the exact
    sign test's (5 of 5 items worse: 1/32), never 0."""
    same = compare_paired([0.5, 0.7, 0.9, 0.4, 0.2], [0.5, 0.7, 0.9, 0.4, 0.2])
    assert (same.se, same.delta, same.decision, same.p_value) == (0.0, 0.0, "pass", 1.0)
    worse = compare_paired([1.0] * 5, [0.9] * 5)
    assert worse.se == 0.0 and worse.decision == "fail"
    assert worse.p_value == pytest.approx(1 / 32)
    tiny = compare_paired([1.0] * 6, [0.99] * 6, margin=0.02)
    assert tiny.decision == "pass"  # worse, but by less than the margin


@pytest.mark.parametrize("n", [1, 2, 4])
def test_fewer_than_five_items_are_not_tested(n):
    """A one-item slice is not "significantly worse" with CI [−1, −1] and p = 0."""
    few = compare_paired([1.0] * n, [0.0] * n)
    assert not few.tested and few.decision == "warn" and few.p_value == 1.0
    assert few.delta == -1.0 and "too few items to test" in few.note


def test_an_undecided_comparison_says_how_many_cases_would_decide_it():
    n = 12
    base = np.full(n, 0.8)
    wide = np.tile([-0.3, 0.3], n // 2)
    unclear = compare_paired(base, base - 0.03 + wide, margin=0.05)
    assert unclear.decision == "warn"
    sd = float(np.std(wide, ddof=1))
    needed = unclear.cases_needed
    t = stats.t.ppf(0.95, needed - 1) + stats.t.ppf(0.8, needed - 1)
    assert t * sd / math.sqrt(needed) <= 0.05  # enough ...
    t_less = stats.t.ppf(0.95, needed - 2) + stats.t.ppf(0.8, needed - 2)
    assert t_less * sd / math.sqrt(needed - 1) > 0.05  # ... and no more than needed
    assert f"about {needed} cases" in unclear.note


def test_decision_rule_on_constructed_cases():
    n = 40
    noise = np.tile([-0.05, 0.05], n // 2)
    base = np.full(n, 0.8)
    clear_drop = compare_paired(base, base - 0.10 + noise, margin=0.02)
    assert clear_drop.ci_high < 0 and clear_drop.decision == "fail"
    no_change = compare_paired(base, base + noise, margin=0.05)
    assert no_change.ci_low >= -0.05 and no_change.decision == "pass"
    wide = np.tile([-0.5, 0.5], n // 2)
    unclear = compare_paired(base, base - 0.03 + wide, margin=0.02)
    assert unclear.decision == "warn"
    small_real_drop = compare_paired(base, base - 0.01 + noise / 10, margin=0.02)
    # certainly worse, but certainly by less than the margin: pass
    assert small_real_drop.ci_high < 0 and small_real_drop.decision == "pass"


def test_mean_se_plain_and_clustered():
    x = RNG.normal(0.7, 0.2, 30)
    plain = mean_se(x)
    assert plain.mean == pytest.approx(x.mean()) and plain.se == pytest.approx(stats.sem(x))
    singletons = mean_se(x, clusters=list(range(30)))  # clusters of size 1 → the plain se
    assert singletons.se == pytest.approx(plain.se) and singletons.clusters == 30
    # repeats of the same item are not independent: clustering widens the interval
    items = np.repeat(RNG.normal(0.7, 0.2, 10), 3) + RNG.normal(0, 0.01, 30)
    clustered = mean_se(items, clusters=np.repeat(np.arange(10), 3))
    assert clustered.se > mean_se(items).se * 1.5
    # sandwich form by hand
    labels = np.repeat(np.arange(10), 3)
    sums = np.array([np.sum(items[labels == g] - items.mean()) for g in range(10)])
    assert clustered.se == pytest.approx(math.sqrt(10 / 9 * np.sum(sums**2) / 30**2))
    assert mean_se([0.5]).se == 0.0
    with pytest.raises(ValueError):
        mean_se([])


def test_mcnemar_exact_matches_scipy_binomtest():
    base = [True] * 30 + [False] * 10
    cand = [True] * 22 + [False] * 8 + [True] * 3 + [False] * 7  # b = 8, c = 3
    expected = stats.binomtest(8, 11, 0.5, alternative="greater").pvalue
    assert mcnemar_exact(base, cand) == pytest.approx(expected)
    assert mcnemar_exact([True, False], [True, False]) == 1.0
    assert mcnemar_exact([True], [False]) == pytest.approx(0.5)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (10, 10), (7, 20), (1, 1), (450, 500)])
def test_wilson_matches_scipy(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(k, n)
    assert (low, high) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_holm_adjustment():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5]) == [0.5]
    assert holm([0.9, 0.8]) == [1.0, 1.0]


def test_a_paired_interval_stays_within_what_a_difference_can_be():
    """A t interval on few spread pairs reached [-1.060, -0.440]: below the worst
    possible drop. Rows hold it clipped to [-1, 1]."""
    from eval_pipeline.core.scoring.rows import PairedRow

    row = PairedRow(metric="m", category="c", n=3, delta=-0.75, ci_low=-1.06,
                    ci_high=-0.44, p_value=0.01, mde=None, decision="fail",
                    cases_needed=None, note="")  # fmt: skip
    assert (row.ci_low, row.ci_high) == (-1.0, -0.44)


def test_the_sequential_note_says_the_numbers_its_row_holds():
    """The note printed Δ from the unrounded estimate while the table printed the row's
    4-decimal value: −0.509 in one, −0.508 in the other. Rows hold the exact value now, and
    every view rounds it once: −0.50851 reads −0.509 (rounded to 4 places first: −0.508)."""
    from eval_pipeline.core.scoring.sequential import decide

    made = decide({"m": [-0.50851] * 6}, margin=0.02, alpha=0.05, look_ahead=False)["m"]
    assert f"{round(made.estimate, 4):+.3f}" == "-0.508"  # (the edge: rounded twice)
    assert made.note.startswith("Δ -0.509, ")


def test_reaches_answers_as_the_exact_log_wealth_does_element_for_element():
    """``reaches`` sums the mixture only near the level; its answer is the exact path's
    (decisions, bounds and sequences are computed with it)."""
    from eval_pipeline.core.scoring.sequential import log_wealth, reaches

    rng = np.random.default_rng(1)
    for trial in range(60):
        n = int(rng.integers(1, 120))
        x = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=(3, n)) if trial % 2 else \
            np.round(rng.uniform(-1, 1, (3, n)), 3)  # fmt: skip
        mu = rng.uniform(-0.9, 0.9, (4, 1))
        side = ("above", "below")[trial % 3 == 0]
        population = n + int(rng.integers(0, 5)) if trial % 4 == 0 else None
        for alpha in (0.05, 0.0167, 0.2):
            level = math.log(1 / alpha)
            exact = log_wealth(x[None], mu[..., None], side=side, population=population)
            fast = reaches(x[None], mu[..., None], level, side=side, population=population)
            assert np.array_equal(fast, exact >= level), (trial, alpha)
