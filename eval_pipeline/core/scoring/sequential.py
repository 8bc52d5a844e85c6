"""The sequential paired gate: an anytime-valid decision on the mean paired difference.

A candidate is compared with its baseline case by case, in a seeded random order, and the
gate may look after every batch and stop as soon as the answer is known. Peeking at a
fixed-n test inflates its false alarms; a *confidence sequence* does not: it covers the
true mean at every sample size at once with probability ≥ 1 − α (time-uniform), so
stopping whenever it excludes an answer keeps the error at α.

The method is the betting confidence sequence for the mean of bounded observations of
Waudby-Smith & Ramdas (2024), "Estimating means of bounded random variables by betting",
JRSS-B 86(1):1–27 (arXiv:2010.09686):

- observations in [lo, hi] are rescaled to [0, 1]; for each candidate mean m (a grid),
  one gambler bets that the mean is above m, wealth K⁺_t(m) = Π(1 + λᵢ⁺(xᵢ − m)), and
  one that it is below, K⁻_t(m) = Π(1 − λᵢ⁻(xᵢ − m)) (§4; the paper's hedged process
  eq. 22 is their max with weights θ, 1 − θ: we keep the two apart, below);
- the bets are *predictable plug-in* (eq. 26–27): λ̃ᵢ = √(2 log(1/α) / (σ̂²ᵢ₋₁ · i ·
  log(1 + i))), from the running variance estimate σ̂²ᵢ = (¼ + Σ(xⱼ − μ̂ⱼ)²)/(i + 1) and
  mean μ̂ᵢ = (½ + Σxⱼ)/(i + 1), truncated to λᵢ⁺ ≤ c/m and λᵢ⁻ ≤ c/(1 − m) with c = ½;
- m is ruled out as too low once K⁺_t(m) ≥ 1/α, as too high once K⁻_t(m) ≥ 1/α
  (Ville's inequality: each happens at the true mean with probability ≤ α, at any time);
  the lower bound is the smallest m not ruled out as too low, the upper the largest not
  ruled out as too high, each a running intersection (once out, always out);
- with ``population`` N, cases are drawn **without replacement** from a suite of N fixed
  values: the mean under test is then the suite's, and the gamblers bet against the mean
  of what is left, mᵗ = (N·m − Σ_{i<t} xᵢ)/(N − t + 1) (§6, "sampling without
  replacement", eq. 35); a candidate m for which that leaves [0, 1] is impossible and
  excluded. The gate does not use it (core/scoring/gate.py ``Sequential``): an agent's
  answers are random, so the suite's realised differences are not fixed values, and
  this form, narrowing to their mean, was wrong far more often than α for an agent that
  samples.

The reference implementation is the ``confseq`` package (github.com/gostevehoward/confseq,
``confseq/betting.py``: ``betting_cs`` with ``lambdas_fns`` = predictable plug-in,
``trunc_scale`` ½); this module follows it with numpy only.

Decisions (the fixed-n gate's rule, now valid under peeking), per metric, with the margin m
as an indifference zone: WORSE when the upper bound is below 0 and the estimate is ≤ −m;
NOT_WORSE when the lower bound is above −m; otherwise CONTINUE. A wrong WORSE needs the
true Δ ≥ 0 and the upper bound below it; a wrong NOT_WORSE needs Δ ≤ −m and the lower
bound above it. With m > 0 no Δ allows both, so each bound may be one-sided at level α
(with m = 0 each gets α/2). Several metrics share α by Bonferroni: each metric at α/k; the
union bound holds for time-uniform events too, so the probability of *any* wrong decision,
at any time, is ≤ α.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

GRID_POINTS = 1001  # candidate means on [0, 1]: a resolution of 0.002 on a [-1, 1] scale
TRUNCATION = 0.5  # c in λ ≤ c/m (Waudby-Smith & Ramdas §4; confseq's trunc_scale)


class Decision(StrEnum):
    WORSE = "WORSE"
    NOT_WORSE = "NOT_WORSE"
    CONTINUE = "CONTINUE"


@dataclass(frozen=True)
class MetricDecision:
    metric: str
    decision: Decision
    n: int  # paired observations used
    estimate: float  # mean paired difference (candidate − baseline)
    lower: float  # the confidence bounds now, each one-sided at level 1 − α/k
    upper: float
    more_to_decide: int | None  # about how many more pairs would decide; None: cannot tell
    note: str  # what a person reads after the metric's name

    @property
    def decided(self) -> bool:
        return self.decision is not Decision.CONTINUE


def confidence_sequence(
    x: Sequence[float], *, alpha: float, lo: float = 0.0, hi: float = 1.0,
    population: int | None = None, grid: int = GRID_POINTS,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Running (lower, upper) after each observation for the mean of observations in
    [lo, hi], taken in the order given: each a time-uniform *one-sided* bound at level
    1 − α (the lower bound ever exceeds the mean with probability ≤ α, and likewise the
    upper ever falls below it), so together a 1 − 2α two-sided sequence. With
    ``population`` N, they are draws without replacement from N values and the mean is
    theirs (the module docstring gives the method)."""
    values = np.asarray(x, dtype=float)
    if values.ndim != 1:
        raise ValueError("confidence_sequence takes one sequence of numbers")
    if not np.all(np.isfinite(values)):
        raise ValueError("confidence_sequence: a value is not a finite number")
    if np.any(values < lo) or np.any(values > hi):
        raise ValueError(f"confidence_sequence: a value is outside [{lo}, {hi}]")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha}: must be in (0, 1)")
    t_max = len(values)
    if population is not None and t_max > population:
        raise ValueError(f"{t_max} draws without replacement from a population of {population}")
    if t_max == 0:
        return np.array([]), np.array([])
    xs = (values - lo) / (hi - lo)
    ms = np.linspace(0.0, 1.0, grid)
    too_low, too_high = _excluded(xs, ms, alpha, population)  # (t, grid), by time t
    step = 1.0 / (grid - 1)
    # The lower bound: the smallest candidate not ruled out as too low; the upper: the
    # largest not ruled out as too high. A grid point stands for the interval around it:
    # each is widened by a step (conservative).
    low_kept, high_kept = ~too_low, ~too_high
    first = np.where(low_kept.any(axis=1), low_kept.argmax(axis=1), grid - 1)
    last = np.where(high_kept.any(axis=1), grid - 1 - high_kept[:, ::-1].argmax(axis=1), 0)
    lower = np.clip(ms[first] - step, 0.0, 1.0)
    upper = np.clip(ms[last] + step, 0.0, 1.0)
    return lo + lower * (hi - lo), lo + upper * (hi - lo)


def _excluded(
    xs: np.ndarray, ms: np.ndarray, alpha: float, population: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """For each time and candidate mean m: whether the gambler betting the mean is above m
    (ruling m out as too low), and the one betting it is below (too high), has reached
    1/α by then (Ville's inequality: each happens with probability ≤ α at the true mean)."""
    t = np.arange(1, len(xs) + 1, dtype=float)
    # predictable plug-in: the estimates from the observations *before* each one (eq. 26-27)
    mu_hat = (0.5 + np.cumsum(xs)) / (t + 1)
    sq = (xs - mu_hat) ** 2
    var_hat = (0.25 + np.cumsum(sq)) / (t + 1)
    var_prev = np.concatenate(([0.25], var_hat[:-1]))
    lam = np.sqrt(2 * math.log(1 / alpha) / (var_prev * t * np.log1p(t)))
    mean_left = _means_left(xs, ms, population)  # (t, grid): the mean bet against at t
    with np.errstate(divide="ignore", invalid="ignore"):
        lam_up = np.minimum(lam[:, None], TRUNCATION / mean_left)
        lam_down = np.minimum(lam[:, None], TRUNCATION / (1 - mean_left))
    impossible = (mean_left < 0) | (mean_left > 1) | ~np.isfinite(mean_left)
    centred = np.where(impossible, 0.0, xs[:, None] - mean_left)
    with np.errstate(invalid="ignore"):  # (only where impossible: those are replaced)
        up = np.where(impossible, 0.0, np.log1p(np.where(impossible, 0.0, lam_up * centred)))
        down = np.where(impossible, 0.0, np.log1p(np.where(impossible, 0.0, -lam_down * centred)))
    threshold = math.log(1 / alpha)
    ruled_out = np.cumsum(impossible, axis=0).astype(bool)  # (WoR: the mean cannot be m)
    too_low = (np.cumsum(up, axis=0) >= threshold) | ruled_out
    too_high = (np.cumsum(down, axis=0) >= threshold) | ruled_out
    return np.logical_or.accumulate(too_low, axis=0), np.logical_or.accumulate(too_high, axis=0)


def _means_left(xs: np.ndarray, ms: np.ndarray, population: int | None) -> np.ndarray:
    """The mean the t-th draw has under "the mean is m": m itself with replacement; the
    mean of the values not yet drawn without (Waudby-Smith & Ramdas §6, eq. 35)."""
    if population is None:
        return np.broadcast_to(ms, (len(xs), len(ms)))
    drawn_before = np.concatenate(([0.0], np.cumsum(xs)[:-1]))
    left = population - np.arange(len(xs), dtype=float)  # N - (t - 1)
    return (population * ms[None, :] - drawn_before[:, None]) / left[:, None]


def decide(
    differences: Mapping[str, Sequence[float]], *, margin: float, alpha: float,
    bounds: Mapping[str, tuple[float, float]] | None = None, population: int | None = None,
) -> dict[str, MetricDecision]:  # fmt: skip
    """Per metric, from its paired differences (candidate − baseline, in the order they
    were drawn): WORSE, NOT_WORSE or CONTINUE (the module docstring gives the rule).
    Family-wise error α over the metrics (Bonferroni on time-uniform sequences).
    ``bounds``: each metric's range of differences (default [−1, 1], scores in [0, 1])."""
    if margin < 0:
        raise ValueError(f"margin={margin}: must be ≥ 0")
    level = alpha / max(1, len(differences))
    if margin == 0:  # Δ = 0 allows both wrong decisions: split the level between them
        level /= 2
    decisions = {}
    for metric, values in differences.items():
        x = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"metric {metric!r}: a paired difference is not a finite number")
        lo, hi = (bounds or {}).get(metric, (-1.0, 1.0))
        decisions[metric] = _decide_one(metric, x, lo, hi, margin, level, population)
    return decisions


def _decide_one(metric: str, x: np.ndarray, lo: float, hi: float, margin: float,
                level: float, population: int | None) -> MetricDecision:  # fmt: skip
    n = len(x)
    if n == 0:
        return MetricDecision(metric, Decision.CONTINUE, 0, 0.0, lo, hi, None,
                              "no paired cases yet")  # fmt: skip
    lowers, uppers = confidence_sequence(x, alpha=level, lo=lo, hi=hi, population=population)
    lower, upper, estimate = float(lowers[-1]), float(uppers[-1]), float(x.mean())
    if upper < 0 and estimate <= -margin:
        decision = Decision.WORSE
    elif lower > -margin:
        decision = Decision.NOT_WORSE
    else:
        decision = Decision.CONTINUE
    more = None if decision is not Decision.CONTINUE else _more_to_decide(
        x, lo, hi, margin, level, population
    )  # fmt: skip
    note = f"Δ {estimate:+.3f}, [{lower:+.3f}, {upper:+.3f}] after {n} pairs: "
    if decision is Decision.CONTINUE:
        ahead = _look_ahead(n, population)
        note += "undecided" + (f"; about {more} more pairs would decide it" if more else
                               f"; the margin is out of reach at this spread (not within "
                               f"{ahead:,} more pairs like these)")  # fmt: skip
    else:
        note += decision.value.replace("_", " ").lower()
    return MetricDecision(metric, decision, n, estimate, lower, upper, more, note)


PROJECTED = 4000  # the most pairs ``_more_to_decide`` looks ahead


def _look_ahead(n: int, population: int | None) -> int:
    """How many further pairs ``_more_to_decide`` looks at after ``n``: up to PROJECTED
    in all, or what is left of a suite of ``population``."""
    return max(0, min(PROJECTED, population or PROJECTED) - n)


def _more_to_decide(x: np.ndarray, lo: float, hi: float, margin: float, level: float,
                    population: int | None) -> int | None:  # fmt: skip
    """About how many further pairs would decide, if those to come looked like those so
    far: the gamblers of ``_excluded`` at the two means that decide (−margin ruled out as
    too low: NOT WORSE; 0 ruled out as too high, with the estimate ≤ −margin: WORSE) run
    on the pairs seen, repeated in order, up to PROJECTED pairs. (Extrapolating the
    width as 1/√n erred badly early: after 5 pairs that never differ it said 189 more at
    a margin of 0.1, where 51 more decide.) None when no number would (an estimate at
    −margin, or no spread to narrow), or the suite has too few cases left."""
    n = len(x)
    ahead = (np.resize(x, n + _look_ahead(n, population)) - lo) / (hi - lo)
    points = (np.array([-margin, 0.0]) - lo) / (hi - lo)  # on [0, 1], like ``ahead``
    too_low, too_high = _excluded(ahead, points, level, None)
    means = np.cumsum(ahead) / np.arange(1, len(ahead) + 1)
    worse = too_high[:, 1] & (means <= points[0])
    later = np.nonzero((too_low[:, 0] | worse)[n:])[0]
    return int(later[0]) + 1 if len(later) else None


@functools.lru_cache(maxsize=64)
def pairs_to_clear(margin: float, alpha: float, metrics: int = 1, most: int = 4000) -> int | None:
    """The fewest paired cases after which ``decide`` calls a metric NOT WORSE when every
    difference is 0 (the best case: nothing moved), with ``metrics`` gated metrics sharing
    α; None when more than ``most`` would be needed. A suite with fewer cases can never
    decide this margin sequentially: only UNCHANGED passes it."""
    lower, _ = confidence_sequence(np.zeros(most), alpha=alpha / max(1, metrics), lo=-1, hi=1)
    cleared = np.nonzero(lower > -margin)[0]
    return int(cleared[0]) + 1 if len(cleared) else None
