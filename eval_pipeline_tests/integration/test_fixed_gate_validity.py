"""The fixed gate's size on both sides, by simulation (issue 44): its FAIL used the t
interval (and, where every pair moved alike, the sign test: a test of the median, not the
mean), so differences with mean 0 but a skewed shape were called worse far beyond α: 57% of
runs at n = 5, 31% at n = 11, 11% at n = 20 (+1 w.p. 0.1, else −1/9), 10% at n = 50 (+1
w.p. 0.2, else −0.25). Each side is now backed by the anytime-valid tests at one look
(paired_gate ``fixed_decision``). The simulation is benchmarks/gate_validity.py's (its
table in BENCHMARKS.md); the rates allow 3 Monte-Carlo SE; fixed seeds.
"""

from __future__ import annotations

import math

import pytest

from eval_pipeline_tests.helpers import benchmark

bench = benchmark("gate_validity")
RUNS = 2000
LIMIT = bench.ALPHA + 3 * math.sqrt(bench.ALPHA * (1 - bench.ALPHA) / RUNS)


def share(outcomes: list[str], outcome: str) -> float:
    return outcomes.count(outcome) / len(outcomes)


@pytest.mark.parametrize("name", bench.NULLS)
def test_the_fixed_gate_calls_an_unchanged_mean_worse_at_most_alpha(name):
    values, probs, n = bench.NULLS[name]
    assert abs(sum(v * p for v, p in zip(values, probs, strict=True))) < 1e-12
    rate = share(bench.fixed_outcomes(bench.draws(values, probs, n, RUNS, seed=n)), "fail")
    assert rate <= LIMIT, f"{name}: wrong FAIL in {rate:.1%} of runs"


@pytest.mark.parametrize("name", bench.AT_MARGIN)
def test_the_fixed_gate_passes_a_drop_of_the_margin_at_most_alpha(name):
    """The PASS side, unchanged: most pairs tie, the rest lose a whole point (Δ = −m)."""
    values, probs, n = bench.AT_MARGIN[name]
    rate = share(bench.fixed_outcomes(bench.draws(values, probs, n, RUNS, seed=n)), "pass")
    assert rate <= LIMIT, f"{name}: wrong PASS in {rate:.1%} of runs"


def test_the_fixed_gate_still_fails_a_clear_drop():
    """Half the cases lose a whole point at n = 30: FAIL nearly always."""
    paths = bench.draws([-1.0, 0.0], [0.5, 0.5], 30, 500, seed=1)
    assert share(bench.fixed_outcomes(paths), "fail") >= 0.95
