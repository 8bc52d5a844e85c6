"""Statistics for regression gates: paired comparisons, exact tests, intervals, Holm.

Everything works on per-item values (one number per golden case, repeats already reduced),
never on run-level averages: the item is the unit that was sampled.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

# scipy.special's distribution functions, which scipy.stats's t, norm and binom call (the
# same numbers): importing scipy.stats costs a process ~0.5 s of CPU, and every CLI
# command that reports a verdict imports this module.
from scipy.special import bdtrc, ndtri, stdtr, stdtrit

Decision = Literal["pass", "warn", "fail"]
# Fewer paired items than this and no test is made: the row shows Δ and says so (a slice
# of one or two items has no spread to estimate, and a t-test on it means nothing).
MIN_PAIRED_N = 5


@dataclass(frozen=True)
class MeanSE:
    mean: float
    se: float
    n: int
    clusters: int | None = None


def mean_se(values: Sequence[float], clusters: Sequence[object] | None = None) -> MeanSE:
    """Mean and its standard error; with cluster labels, the cluster-robust (sandwich)
    standard error with the small-sample factor C/(C−1)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        raise ValueError("mean_se needs at least one value")
    mean = float(x.mean())
    if clusters is None:
        se = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
        return MeanSE(mean, se, n)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster labels for {n} values")
    labels = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)[1]
    sums = np.bincount(labels, weights=x - mean)
    c = len(sums)
    if c < 2:
        return MeanSE(mean, 0.0, n, c)
    variance = c / (c - 1) * float(np.sum(sums**2)) / n**2
    return MeanSE(mean, math.sqrt(variance), n, c)


@dataclass(frozen=True)
class PairedComparison:
    n: int
    delta: float  # mean of candidate − baseline
    se: float
    ci_low: float  # two-sided 1 − 2α interval (Student t, n − 1 d.f.)
    ci_high: float
    p_value: float  # one-sided, H1: the candidate is worse
    mde: float  # smallest drop detectable with 80% power at this n and spread
    margin: float
    alpha: float
    decision: Decision
    tested: bool = True  # False: fewer than MIN_PAIRED_N items, no p-value or CI
    cases_needed: int | None = None  # for 80% power to detect a drop of ``margin``

    @property
    def note(self) -> str:
        """What a reader needs beyond the numbers: why untested, or what would decide it."""
        if not self.tested:
            if self.n == 0:
                return "no paired items (their scores are missing): nothing to test"
            return f"too few items to test (n={self.n} < {MIN_PAIRED_N}): Δ only"
        if self.decision == "warn" and self.cases_needed:
            return (f"cannot tell at n={self.n}: detecting a drop of {self.margin:g} with 80% "
                    f"power needs about {self.cases_needed} cases (per-item SD "
                    f"{self.se * math.sqrt(self.n):.3f})")  # fmt: skip
        return ""


def compare_paired(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    margin: float = 0.02,
    alpha: float = 0.05,
    power: float = 0.8,
) -> PairedComparison:
    """Paired comparison of per-item values (same items, same order).

    fail: the upper confidence bound of delta is below 0 *and* delta ≤ −margin;
    pass: the lower bound is ≥ −margin (worse by less than the margin, with confidence);
    warn: anything else (too few items or too much noise to tell).
    """
    b, c = np.asarray(baseline, dtype=float), np.asarray(candidate, dtype=float)
    if len(b) != len(c):
        raise ValueError(f"paired values differ in length: {len(b)} baseline, {len(c)} candidate")
    n = len(b)
    d = c - b
    delta = float(d.mean()) if n else 0.0
    if n < MIN_PAIRED_N:  # (none at all: a metric or a category whose scores are missing)
        return PairedComparison(n, delta, 0.0, delta, delta, 1.0, 0.0, margin, alpha, "warn",
                                tested=False)  # fmt: skip
    all_equal = bool(np.all(d == d[0]))
    se = 0.0 if all_equal else float(d.std(ddof=1) / math.sqrt(n))
    if se == 0.0:  # every item moved by the same amount: no spread for a t-test
        half = mde = 0.0
        p_value = sign_test(d)
    else:
        t = t_quantile(1 - alpha, n - 1)
        half = t * se
        mde = (t + t_quantile(power, n - 1)) * se
        p_value = float(stdtr(n - 1, delta / se))  # (one-sided paired t: worse)
    if delta + half < 0 and delta <= -margin:
        decision: Decision = "fail"
    elif delta - half >= -margin:
        decision = "pass"
    else:
        decision = "warn"
    needed = cases_needed(se * math.sqrt(n), margin, alpha, power) if se > 0 else None
    return PairedComparison(n, delta, se, delta - half, delta + half, p_value, mde, margin,
                            alpha, decision, cases_needed=needed)  # fmt: skip


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: int) -> float:
    """Student t's quantile (scipy's ppf costs ~0.1 ms, and the gate asks for few)."""
    return float(stdtrit(df, q))


def welch_less(
    mean: float, sd: float, n: int, other_mean: float, other_sd: float, other_n: int
) -> float:
    """One-sided Welch t-test from summary statistics (sample SDs): the p-value that the
    first mean is below the other's, with Welch–Satterthwaite degrees of freedom (Welch
    1947, Biometrika 34, eq. 9). What ``scipy.stats.ttest_ind_from_stats(...,
    equal_var=False, alternative="less")`` returns, without importing scipy.stats (~0.6 s).
    Needs ``n``, ``other_n`` ≥ 2 and a spread on at least one side (the daily trace check
    has both: five traces a day at least, and decides two spreads of 0 without a test).
    """
    v, other_v = sd**2 / n, other_sd**2 / other_n
    df = (v + other_v) ** 2 / (v**2 / (n - 1) + other_v**2 / (other_n - 1))
    return float(stdtr(df, (mean - other_mean) / math.sqrt(v + other_v)))


def sign_test(differences: np.ndarray) -> float:
    """One-sided exact sign test that the candidate is worse: P[X ≥ drops], X ~ Bin(k, ½)
    over the k items that changed (1.0 when none did)."""
    drops, changed = int(np.sum(differences < 0)), int(np.sum(differences != 0))
    return float(bdtrc(drops - 1, changed, 0.5)) if changed else 1.0


def cases_needed(sd: float, margin: float, alpha: float, power: float = 0.8) -> int | None:
    """Items a paired one-sided t-test needs to detect a drop of ``margin`` with ``power``,
    given the SD of per-item differences: the smallest n with
    (t[1−α, n−1] + t[power, n−1]) · sd / √n ≤ margin. None without a margin or a spread."""
    if margin <= 0 or sd <= 0:
        return None
    z = float(ndtri(1 - alpha)) + float(ndtri(power))
    n = max(MIN_PAIRED_N, math.ceil((z * sd / margin) ** 2))  # t > z: a lower bound
    while n < 10_000_000:
        t = float(stdtrit(n - 1, 1 - alpha)) + float(stdtrit(n - 1, power))
        if t * sd / math.sqrt(n) <= margin:
            return n
        n += 1
    return None


def mcnemar_exact(baseline_pass: Sequence[bool], candidate_pass: Sequence[bool]) -> float:
    """One-sided exact McNemar p-value that the candidate fails more items.

    b = items the baseline passes and the candidate fails, c = the reverse;
    p = P[X ≥ b] with X ~ Binomial(b + c, ½); 1.0 when b + c = 0.
    """
    if len(baseline_pass) != len(candidate_pass):
        raise ValueError("paired pass/fail lists differ in length")
    pairs = list(zip(baseline_pass, candidate_pass, strict=True))
    b = sum(1 for old, new in pairs if old and not new)
    c = sum(1 for old, new in pairs if new and not old)
    if b + c == 0:
        return 1.0
    return float(bdtrc(b - 1, b + c, 0.5))


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a rate (sensible at 0 %, 100 % and small n)."""
    if n == 0:
        return (0.0, 1.0)
    z = float(ndtri(1 - (1 - confidence) / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
