"""The sequential paired gate: anytime-valid NOT WORSE / WORSE on a mean paired difference.

A candidate is compared with its baseline case by case, in a seeded random order; the gate
looks after every batch and stops as soon as the answer is known. Each pair is one case:
d = candidate score − baseline score, in [lo, hi] (default [−1, 1]). Per gated metric, with
margin m > 0 and Δ = E[d]:

- NOT_WORSE: reject H0⁺: Δ ≤ −m. Test martingale (a gambler betting the mean is above −m)
      K⁺_t = Σ_j w_j Π_{i≤t} (1 + c_j (dᵢ + m)/(1 − m))   (lo = −1; 1/(μ − lo): the largest bet)
  decided when K⁺_t ≥ 1/α_nw at some t;
- WORSE: reject H0⁻: Δ ≥ 0. Test martingale betting the mean is below 0
      K⁻_t = Σ_j w_j Π_{i≤t} (1 − c_j dᵢ)                          (hi = 1)
  decided when K⁻ has reached k/α_w by t **and** the estimate d̄_t ≤ −m (the margin as an
  indifference zone: a significant drop smaller than m is not called WORSE);
- otherwise CONTINUE. The first decision in time stands (both events are time-uniform, so a
  decision, once made, never needs to be revoked; ``decide`` on a longer prefix keeps it).

Decisions are made by these test martingales *at the decision points themselves* (−m and
0), not read off a grid.

**Bets** ("diversified Kelly": a fixed mixture of constant bets, Waudby-Smith & Ramdas 2024,
JRSS-B 86(1):1–27, arXiv:2010.09686, their dKelly strategy; confseq ``dKelly_cs`` /
``diversified_betting_mart``): c_j ∈ BETS are fractions of the largest allowed bet, with
weight ½ on c = 0.99 (an all-but-all-in bet: it makes a run whose scores did not move clear
within a few pairs of the floor any level-α test has, (1 − m)ⁿ ≤ α) and ½ spread over
c = 0.1 … 0.9 with weights ∝ c(1 − c) (a discretised Beta(2, 2) prior over constant bets:
a finite universal portfolio, Cover 1991, Math. Finance 1(1):1–29; its regret against the
best constant bet in hindsight is at most log(1/w_j), cf. Orabona & Jun 2024, IEEE Trans.
Inf. Theory 70(1), arXiv:2110.14099). Chosen by simulation over predictable plug-in (the old
bettor), aGRAPA, follow-the-leader Kelly and online Newton step, alone and mixed
(choose_bets.py, REPORT.md).

**Validity.** Write y_t = (x_t − μ)/(μ − lo) ∈ [−1, ∞) (for the bet above μ; the bet below
uses (μ − x_t)/(hi − μ)). If E[x_t | past] ≤ μ, each factor 1 + c y_t, c ∈ [0, 1], is
≥ 0 with conditional mean ≤ 1, so each Π(1 + c_j y_t) is a non-negative supermartingale
with initial value 1 (a test supermartingale); any fixed convex combination Σ w_j K_j of
test supermartingales is one too (Shafer, Shen, Vereshchagin & Vovk 2011, Stat. Sci.
26(1):84–101; WSR 2024 for the mixture of betting strategies). Ville's inequality (Ville
1939): P(∃t: K_t ≥ 1/α) ≤ α. Hence, at any data-dependent stopping time and under any
peeking: P(wrong NOT_WORSE for a metric with Δ ≤ −m) ≤ α_nw, P(wrong WORSE for a metric
with Δ ≥ 0) ≤ α_w/k.

**Several metrics.** PASS needs *every* gated metric NOT_WORSE: an intersection–union test
(Berger 1982, Technometrics 24(4):295–300; Berger & Hsu 1996, Stat. Sci. 11(4)): if any
metric j has Δ_j ≤ −m, P(PASS) ≤ P(NOT_WORSE_j) ≤ α_nw, so each metric's NOT_WORSE test
runs at the full α_nw with no multiplicity correction. WORSE (one metric is enough to FAIL)
is a union of k tests: each at α_w/k (Bonferroni; the union bound holds for time-uniform
events), k = ``family`` (gated metrics plus any pass/fail metrics the caller tests in the
same family). With m = 0 the same Δ = 0 allows both wrong decisions, so both levels are
halved to keep "any wrong decision" ≤ α.

**Confidence bounds, consistent with the decisions.** The bets c_j do not depend on μ, and
each factor 1 + c (x − μ)/(μ − lo) is non-increasing in μ, so K⁺_t(μ) is non-increasing in μ
(and K⁻_t(μ) non-decreasing): the μ ruled out as too low form an interval (lo, L_t] and
L_t = sup{μ: max_{s≤t} K⁺_s(μ) ≥ 1/α_nw} is found exactly by bisection. NOT_WORSE ⇔ −m is
ruled out ⇔ L_t ≥ −m, and the claim is Δ > L_t (so a decided NOT_WORSE always shows a
lower bound at or above −m: the two never disagree). Likewise the upper bound at level
1 − α_w/k: WORSE implies U_t ≤ 0 (claim Δ < U_t). ``confidence_sequence`` gives the whole
path on a grid of μ (conservative by at most a grid step).

**Without replacement** (``population`` N): the gamblers bet against the mean of the cases
not yet drawn, mᵗ = (N μ − Σ_{i<t} xᵢ)/(N − t + 1) (WSR 2024 §6, eq. 35); mᵗ is increasing
in μ so the bounds stay monotone; a μ that leaves mᵗ outside [lo, hi] is impossible and is
ruled out. The gate does not use it (core/scoring/gate.py ``Sequential``: an agent's answers
are random, so the Δ to decide on is that of a case answered afresh).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from scipy.special import logsumexp

GRID_POINTS = 1001  # candidate means for the reported path (confidence_sequence)
PROJECTED = 4000  # the most pairs the look-ahead (more_to_decide) considers
BETS = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99])
_SPREAD = BETS[:-1] * (1 - BETS[:-1])
WEIGHTS = np.concatenate((0.5 * _SPREAD / _SPREAD.sum(), [0.5]))
LOG_WEIGHTS = np.log(WEIGHTS)
LOOK_AHEAD_DRAWS = 64  # bootstrap continuations behind "about N more pairs"
BOUND_STEPS, BOUND_ROUNDS = 128, 5  # the exact bounds' search (_bound)


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
    lower: float  # Δ > lower (anytime-valid, one-sided 1 − alpha_not_worse); lo: no bound yet
    upper: float  # Δ < upper (anytime-valid, one-sided 1 − alpha_worse/family); hi: none yet
    more_to_decide: int | None  # about how many more pairs would decide; None: cannot tell
    note: str  # what a person reads after the metric's name
    decided_at: int | None = None  # the pair at which the decision was reached
    e_not_worse: float = 1.0  # the largest value the NOT_WORSE test martingale reached
    e_worse: float = 1.0  # the largest value the WORSE test martingale reached

    @property
    def decided(self) -> bool:
        return self.decision is not Decision.CONTINUE


# --- the test martingales ------------------------------------------------------------


def log_wealth(
    x: np.ndarray, mu: float | np.ndarray, *, lo: float = -1.0, hi: float = 1.0,
    side: str = "above", population: int | None = None,
) -> np.ndarray:  # fmt: skip
    """log K_t for t = 1..T of the mixture gambler betting that the mean is above ``mu``
    (``side="above"``: evidence against H0 mean ≤ mu) or below it (``"below"``: against
    mean ≥ mu), on observations ``x`` of shape (..., T) in [lo, hi]. ``mu``: a number, or an
    array broadcast against x's leading axes (e.g. shape (G,) with x of shape (1, T) for a
    grid of means). +inf where ``mu`` has become impossible (without replacement, or an
    observation that the null rules out). Vectorised: simulations call this directly."""
    y, ruled_out = _bets(x, mu, lo, hi, side, population)
    total = _mixture(y.reshape(-1, y.shape[-1])).reshape(y.shape)
    return np.where(ruled_out, np.inf, total)


def reaches(
    x: np.ndarray, mu: float | np.ndarray, level: float, *, lo: float = -1.0, hi: float = 1.0,
    side: str = "above", population: int | None = None,
) -> np.ndarray:  # fmt: skip
    """Whether ``log_wealth(x, mu, ...)`` is ≥ ``level`` at each time (same shapes, same
    answer element for element), without the mixture's exact value where the largest bet
    alone settles it: the mixture's log lies in [top, top + log(number of bets)] for top
    the largest weighted bet's log wealth, so only times within that band of ``level`` are
    summed. What the decisions, bounds and simulations need, at about half the cost."""
    y, ruled_out = _bets(x, mu, lo, hi, side, population)
    hit = _mixture_reaches(y.reshape(-1, y.shape[-1]), level).reshape(y.shape)
    return np.asarray(hit | ruled_out)


def _bets(x: np.ndarray, mu: float | np.ndarray, lo: float, hi: float, side: str,
          population: int | None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """What each bet multiplies its wealth by, less one (y, with 1 + c·y the factor), and
    where the null's mean has become impossible (ruled out from then on)."""
    x = np.asarray(x, dtype=float)
    mu = np.asarray(mu, dtype=float)[..., None]
    if population is None:
        m_t = np.broadcast_to(mu, np.broadcast_shapes(mu.shape, x.shape))
    else:
        t = np.arange(x.shape[-1], dtype=float)  # draws before this one
        before = np.cumsum(x, axis=-1) - x
        m_t = (population * mu - before) / (population - t)
    if side == "above":
        num, den = x - m_t, m_t - lo
    elif side == "below":
        num, den = m_t - x, hi - m_t
    else:
        raise ValueError(f"side={side!r}: 'above' or 'below'")
    # den ≤ 0: the null's mean is at (or beyond) the end of the range: it is impossible
    # when beyond, and when at the end every further value must sit there too.
    impossible = (den < 0) | ((den <= 0) & (num > 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    y = np.maximum(y, -1.0)  # (rounding only: y ≥ −1 whenever the null is possible)
    return y, np.logical_or.accumulate(impossible, axis=-1)


def _mixture(y: np.ndarray, chunk: int = 400_000) -> np.ndarray:
    """log Σ_j w_j Π_{i≤t} (1 + c_j yᵢ) for rows of y (rows, T), in chunks of rows (memory).
    (c_j ≤ 0.99 and y ≥ −1: every factor is ≥ 0.01, so no log of 0.)"""
    out = np.empty_like(y)
    for rows, logs in _weighted_logs(y, chunk):
        top = logs.max(axis=0)
        out[rows] = top + np.log(np.exp(logs - top).sum(axis=0))
    return out


def _mixture_reaches(y: np.ndarray, level: float, chunk: int = 400_000) -> np.ndarray:
    """Whether ``_mixture(y)`` ≥ level, element for element (``reaches``). The sum of the
    bets' shares exp(logs − top) is ≥ 1 (the top's own share) and ≤ len(BETS), so the
    mixture is ≥ top and ≤ top + log(len(BETS)); elements in between are summed as
    ``_mixture`` sums them (the same operations: the same bits)."""
    out = np.empty(y.shape, dtype=bool)
    band = math.log(len(BETS)) + 1e-9  # (and a hair for log's last bit)
    for rows, logs in _weighted_logs(y, chunk):
        top = logs.max(axis=0)
        hit = top >= level
        close = ~hit & (top >= level - band)
        if close.any():
            near = top[close]
            hit[close] = near + np.log(np.exp(logs[:, close] - near).sum(axis=0)) >= level
        out[rows] = hit
    return out


def _weighted_logs(y: np.ndarray, chunk: int) -> Iterator[tuple[slice, np.ndarray]]:
    """(rows, log w_j + Σ_{i≤t} log(1 + c_j yᵢ) of shape (bets, rows, T)) per chunk of rows."""
    step = max(1, chunk // max(1, y.shape[-1]))
    for start in range(0, y.shape[0], step):
        part = y[start : start + step]
        logs = np.cumsum(np.log1p(BETS[:, None, None] * part[None]), axis=-1)
        logs += LOG_WEIGHTS[:, None, None]
        yield slice(start, start + step), logs


def _crossed(path: np.ndarray, level: float) -> np.ndarray:
    """Whether the test martingale has reached 1/level by each time (running)."""
    return np.logical_or.accumulate(path >= math.log(1 / level), axis=-1)


def _reached(x: np.ndarray, mu: float | np.ndarray, level: float, **kw: Any) -> np.ndarray:
    """``_crossed(log_wealth(x, mu, **kw), level)``, computed by ``reaches``."""
    return np.logical_or.accumulate(reaches(x, mu, math.log(1 / level), **kw), axis=-1)


def decision_times(
    x: np.ndarray, *, margin: float, alpha_not_worse: float, alpha_worse: float,
    lo: float = -1.0, hi: float = 1.0, population: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """For paired differences ``x`` (..., T): the first pair at which NOT_WORSE is reached
    and the first at which WORSE is (T + 1 when never), each at the level given (the WORSE
    level already divided by the family's size). The vectorised core of ``decide``."""
    x = np.asarray(x, dtype=float)
    big = x.shape[-1] + 1
    t = np.arange(1, x.shape[-1] + 1)
    nw = _reached(x, -margin, alpha_not_worse, lo=lo, hi=hi, side="above",
                  population=population)  # fmt: skip
    worse = _reached(x, 0.0, alpha_worse, lo=lo, hi=hi, side="below",
                     population=population) & (np.cumsum(x, axis=-1) / t <= -margin)  # fmt: skip
    def first(hit: np.ndarray) -> np.ndarray:
        return np.asarray(np.where(hit.any(axis=-1), hit.argmax(axis=-1) + 1, big))

    return first(nw), first(worse)


def first_decision(
    x: np.ndarray, *, margin: float, alpha_not_worse: float, alpha_worse: float,
    lo: float = -1.0, hi: float = 1.0, population: int | None = None,
) -> tuple[Decision, int | None]:  # fmt: skip
    """The first decision reached on the paired differences ``x`` (one sequence, levels as
    in ``decision_times``) and the pair it was reached at: WORSE when both are reached at
    the same pair (the safe side); (CONTINUE, None) when neither is. ``decide``'s rule,
    without its bounds and notes, for simulations that only need the decision."""
    n = len(x)
    t_nw, t_w = (int(v) for v in decision_times(x, margin=margin, alpha_not_worse=alpha_not_worse,
                                                alpha_worse=alpha_worse, lo=lo, hi=hi,
                                                population=population))  # fmt: skip
    if t_w <= n and t_w <= t_nw:
        return Decision.WORSE, t_w
    if t_nw <= n:
        return Decision.NOT_WORSE, t_nw
    return Decision.CONTINUE, None


# --- bounds ---------------------------------------------------------------------------


def _bound(x: np.ndarray, alpha: float, lo: float, hi: float, side: str,
           population: int | None, known: float | None = None) -> float:  # fmt: skip
    """The exact running bound after all of ``x``: for side "above" the largest μ ruled out
    as too low by some time (the lower bound L: Δ > L), for "below" the smallest ruled out
    as too high (U: Δ < U). Whether μ is ruled out is monotone in μ, so the boundary is
    found by a search that narrows it 128-fold a round (``BOUND_ROUNDS`` rounds, to
    (hi − lo)/128⁵ ≈ 6e-11, one vectorised pass each: bisection took 60 passes);
    ``known``: a μ already known to be ruled out (the decision point), so the bound never
    disagrees with it."""
    level = math.log(1 / alpha)

    def out(mu: np.ndarray) -> np.ndarray:
        hits = reaches(x[None, :], mu, level, lo=lo, hi=hi, side=side, population=population)
        ruled_out: np.ndarray = np.asarray(hits.any(axis=-1))
        return ruled_out

    # ruled out at ``outside``; not ruled out at ``inside``; the boundary lies between
    inside, outside = (hi, lo) if side == "above" else (lo, hi)
    if out(np.array([inside]))[0]:
        return inside
    if known is not None and out(np.array([known]))[0]:
        outside = known
    for _ in range(BOUND_ROUNDS):
        mu = np.linspace(outside, inside, BOUND_STEPS + 1)[1:-1]
        ruled = out(mu)  # True up to the boundary, then False
        count = int(ruled.sum())
        if count:
            outside = float(mu[count - 1])
        if count < len(mu):
            inside = float(mu[count])
    return outside


def confidence_sequence(
    x: Sequence[float], *, alpha: float, lo: float = 0.0, hi: float = 1.0,
    population: int | None = None, grid: int = GRID_POINTS,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Running (lower, upper) after each observation for the mean of observations in
    [lo, hi], in the order given: each a time-uniform *one-sided* bound at level 1 − α
    (the lower bound ever exceeds the mean with probability ≤ α, likewise the upper), so
    together a 1 − 2α sequence. Read off ``grid`` candidate means: each bound is a grid
    point that is ruled out, so it is conservative by at most one grid step; ``decide``
    computes the final bounds exactly. With ``population`` N, draws without replacement
    from N values and the mean is theirs (module docstring)."""
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
    ms = np.linspace(lo, hi, grid)[1:-1]  # (the ends are never ruled out by a bet)
    low = _reached(values[None, :], ms, alpha, lo=lo, hi=hi, side="above",
                   population=population)  # (G, T), monotone in μ  # fmt: skip
    high = _reached(values[None, :], ms, alpha, lo=lo, hi=hi, side="below",
                    population=population)  # fmt: skip
    n_low = low.sum(axis=0)  # ruled out as too low: the first n_low grid points
    n_high = high.sum(axis=0)  # ruled out as too high: the last n_high
    lower = np.where(n_low > 0, ms[np.maximum(n_low - 1, 0)], lo)
    upper = np.where(n_high > 0, ms[np.minimum(len(ms) - n_high, len(ms) - 1)], hi)
    return lower, upper


# --- decisions -----------------------------------------------------------------------


def decide(
    differences: Mapping[str, Sequence[float]], *, margin: float, alpha: float | None = None,
    alpha_not_worse: float | None = None, alpha_worse: float | None = None,
    family: int | None = None, bounds: Mapping[str, tuple[float, float]] | None = None,
    population: int | None = None, look_ahead: bool = True, suite: int | None = None,
) -> dict[str, MetricDecision]:  # fmt: skip
    """Per metric, from its paired differences (candidate − baseline, in the order they were
    drawn): WORSE, NOT_WORSE or CONTINUE (module docstring).

    ``alpha_not_worse``: each metric's NOT WORSE level (PASS = all NOT WORSE is an
    intersection–union test, so the full α, with no split over metrics). ``alpha_worse``:
    the family-wise level of WORSE, split over ``family`` tests (default: the metrics given;
    pass the gated plus the pass/fail metrics tested in the same family). ``alpha`` alone
    sets both (backwards compatible: a wrong PASS and a wrong FAIL each stay ≤ α). With
    margin = 0 both are halved. ``bounds``: each metric's range of differences (default
    [−1, 1]). ``look_ahead``: estimate how many more pairs would decide an undecided metric.
    ``suite``: the cases there are to pair in all (however they are drawn: the gate treats
    its pairs as draws with replacement and passes no ``population``, yet a suite of N
    cases gives N pairs at most): the look-ahead never counts beyond them, and an undecided
    metric the rest of the suite cannot decide says so.

    A metric's decision is the first reached, at any pair so far (``decided_at``): both
    tests are time-uniform, so it stands on any longer prefix, and a caller that looks after
    every batch and stops when decided sees exactly these decisions. Its ``lower`` and
    ``upper`` agree with it (module docstring)."""
    if margin < 0:
        raise ValueError(f"margin={margin}: must be ≥ 0")
    alpha_not_worse = alpha if alpha_not_worse is None else alpha_not_worse
    alpha_worse = alpha if alpha_worse is None else alpha_worse
    if alpha_not_worse is None or alpha_worse is None:
        raise ValueError("decide needs alpha, or alpha_not_worse and alpha_worse")
    if margin == 0:  # Δ = 0 allows both wrong decisions: split the level between them
        alpha_not_worse, alpha_worse = alpha_not_worse / 2, alpha_worse / 2
    for name, a in (("alpha_not_worse", alpha_not_worse), ("alpha_worse", alpha_worse)):
        if not 0 < a < 1:
            raise ValueError(f"{name}={a}: must be in (0, 1)")
    k = max(1, len(differences) if family is None else family)
    decisions = {}
    for metric, values in differences.items():
        x = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"metric {metric!r}: a paired difference is not a finite number")
        lo, hi = (bounds or {}).get(metric, (-1.0, 1.0))
        if np.any(x < lo) or np.any(x > hi):
            raise ValueError(f"metric {metric!r}: a paired difference is outside [{lo}, {hi}]")
        if not lo < -margin <= 0 < hi:
            raise ValueError(f"metric {metric!r}: margin {margin} does not fit [{lo}, {hi}]")
        decisions[metric] = _decide_one(metric, x, lo, hi, margin, alpha_not_worse,
                                        alpha_worse / k, population, look_ahead,
                                        suite)  # fmt: skip
    return decisions


def _decide_one(metric: str, x: np.ndarray, lo: float, hi: float, margin: float,
                a_nw: float, a_w: float, population: int | None,
                look_ahead: bool, suite: int | None = None) -> MetricDecision:  # fmt: skip
    n = len(x)
    if n == 0:
        return MetricDecision(metric, Decision.CONTINUE, 0, 0.0, lo, hi, None,
                              "no paired cases yet")  # fmt: skip
    up = log_wealth(x, -margin, lo=lo, hi=hi, side="above", population=population)
    down = log_wealth(x, 0.0, lo=lo, hi=hi, side="below", population=population)
    decision, at = first_decision(x, margin=margin, alpha_not_worse=a_nw, alpha_worse=a_w,
                                  lo=lo, hi=hi, population=population)  # fmt: skip
    after = ""
    if at is not None and at < n:
        # The decision stands from the pair it was reached at, and its evidence is the
        # pairs up to there (a gate that runs on stops there): shown with the pairs after
        # it, a FAIL read Δ −0.057 at a margin of 0.1.
        after = f"; the {count_pairs(n - at)} after it are no evidence"
        x, n = x[:at], at
    lower = _bound(x, a_nw, lo, hi, "above", population, known=-margin)
    upper = _bound(x, a_w, lo, hi, "below", population, known=0.0)
    estimate = float(x.mean())
    size = min((s for s in (population, suite) if s), default=None)  # the cases there are
    most = PROJECTED if size is None else min(PROJECTED, size)
    more = None
    if decision is Decision.CONTINUE and look_ahead:
        more = more_to_decide(x, margin=margin, alpha_not_worse=a_nw, alpha_worse=a_w,
                              lo=lo, hi=hi, population=population, most=most)  # fmt: skip
    level = f"{100 * (1 - a_nw):g}%"
    # (exact numbers, rounded once, here as wherever the gate's rows are shown)
    note = f"Δ {estimate:+.3f}, [{lower:+.3f}, {upper:+.3f}] after {count_pairs(n)}: "
    if decision is Decision.CONTINUE:
        ahead = _look_ahead(n, population, most)
        note += (f"undecided; not worse by more than {max(0.0, -lower):.3f} so far "
                 f"({level}, anytime-valid)")  # fmt: skip
        if look_ahead:
            note += _ahead_note(n, more, ahead, size, most)
    else:
        note += decision.value.replace("_", " ").lower() + after
    return MetricDecision(metric, decision, n, estimate, lower, upper, more, note, at,
                          float(np.exp(min(700.0, np.max(up)))),
                          float(np.exp(min(700.0, np.max(down)))))  # fmt: skip


def count_pairs(n: int) -> str:
    """"1 pair", "n pairs": how the gate's notes count them."""
    return f"{n} pair" if n == 1 else f"{n} pairs"


def _ahead_note(n: int, more: int | None, ahead: int, size: int | None, most: int) -> str:
    """What the look-ahead found: about how many more pairs would decide, never more than
    the suite of ``size`` cases has left; else that the rest of the suite would not (or,
    without a suite, that the margin is out of reach within the look-ahead)."""
    if more:
        return f"; about {more} more pairs ({n + more} in all) would decide it"
    if size is None or most < size:  # (a suite larger than the look-ahead)
        return (f"; the margin is out of reach at this spread (not within {ahead:,} more "
                f"pairs like these)")  # fmt: skip
    if ahead == 0:
        return f"; the whole suite ({size} cases) is paired and cannot decide it"
    return (f"; the whole suite ({size} cases) would not decide it at this spread (not "
            f"within the {ahead:,} more pairs it has left)")  # fmt: skip


def _look_ahead(n: int, population: int | None, most: int = PROJECTED) -> int:
    """How many further pairs the look-ahead considers after ``n``: up to ``most`` in all,
    or what is left of a suite of ``population``."""
    return max(0, min(most, population or most) - n)


def more_to_decide(
    x: Sequence[float] | np.ndarray, *, margin: float, alpha_not_worse: float, alpha_worse: float,
    lo: float = -1.0, hi: float = 1.0, population: int | None = None,
    draws: int = LOOK_AHEAD_DRAWS, seed: int = 0, quantile: float = 0.5, most: int = PROJECTED,
) -> int | None:  # fmt: skip
    """About how many further pairs would decide (either way), if those to come were like
    those so far: the pairs seen are resampled (bootstrap, ``draws`` continuations, fixed
    ``seed``) and the actual test martingales are run on, pair by pair, so the answer is a
    whole number of pairs of the values the metric takes (exact when every pair so far is
    the same, e.g. all tied); the ``quantile`` (median) of the continuations' pairs to a
    decision. None when that many continuations do not decide within the look-ahead
    (``most`` pairs in all, or what is left of a suite of ``population``)."""
    x = np.asarray(x, dtype=float)
    n, ahead = len(x), _look_ahead(len(x), population, most)
    if n == 0 or ahead == 0:
        return None
    same = bool(np.all(x == x[0]))
    rng = np.random.default_rng(seed)
    rows = 1 if same else draws
    future = x[0] + np.zeros((1, ahead)) if same else rng.choice(x, size=(rows, ahead))
    # Looked at over a horizon that grows fourfold while the median has not decided: most
    # runs decide within a few times the pairs they have, and the whole look-ahead (up to
    # ``most`` pairs, 200 continuations) costs a hundred times more.
    horizon = min(ahead, max(64, 2 * n))
    while True:
        paths = np.concatenate((np.broadcast_to(x, (rows, n)), future[:, :horizon]), axis=1)
        t_nw, t_w = decision_times(paths, margin=margin, alpha_not_worse=alpha_not_worse,
                                   alpha_worse=alpha_worse, lo=lo, hi=hi,
                                   population=population)  # fmt: skip
        when = np.minimum(t_nw, t_w).astype(float)
        when[when > n + horizon] = np.inf
        need = float(np.quantile(when, quantile, method="higher"))
        if np.isfinite(need):
            return int(need) - n
        if horizon >= ahead:
            return None
        horizon = min(ahead, 4 * horizon)


# --- what a suite of n cases can do ------------------------------------------------------


def _tied_log_wealth(n: np.ndarray | int, margin: float) -> np.ndarray:
    """log K⁺_n(−margin) after n pairs that are all 0 (nothing moved), on [−1, 1]."""
    y = margin / (1 - margin)
    n = np.asarray(n, dtype=float)
    return np.asarray(logsumexp(LOG_WEIGHTS + n[..., None] * np.log1p(BETS * y), axis=-1))


@functools.lru_cache(maxsize=256)
def pairs_to_clear(margin: float, alpha: float, most: int = PROJECTED) -> int | None:
    """The fewest paired cases after which ``decide`` calls a metric NOT WORSE when every
    difference is 0 (nothing moved), at NOT WORSE level ``alpha`` (however many metrics:
    each metric's NOT WORSE runs at the full α, intersection–union); None when more than
    ``most`` would be needed. Exact (closed form)."""
    if not 0 < margin < 1:
        return None if margin <= 0 else 1
    n = np.arange(1, most + 1)
    hit = np.nonzero(_tied_log_wealth(n, margin) >= math.log(1 / alpha))[0]
    return int(hit[0]) + 1 if len(hit) else None


def floor_pairs(margin: float, alpha: float) -> int:
    """The fewest tied pairs after which *any* level-α test can say NOT WORSE: the null
    distribution with mass m at −1 and 1 − m at 0 gives n ties probability (1 − m)ⁿ, which
    must be ≤ α (Neyman–Pearson)."""
    return math.ceil(math.log(1 / alpha) / math.log(1 / (1 - margin)) - 1e-12)


@functools.lru_cache(maxsize=1024)
def best_bound(n: int, alpha: float) -> float:
    """The best lower bound on Δ that n pairs can ever give this gate (all tied: d = 0), one-
    sided at level 1 − alpha, on [−1, 1]. Any level-α method's best is α^{1/n} − 1
    (``floor_bound``)."""
    if n <= 0:
        return -1.0
    level = math.log(1 / alpha)
    inside, outside = 0.0, -1.0  # −m with K⁺ below / at or above 1/α
    for _ in range(60):
        mid = 0.5 * (inside + outside)
        if _tied_log_wealth(n, -mid) >= level:
            outside = mid
        else:
            inside = mid
    return outside


def finest_margin(n: int, alpha: float) -> float:
    """The smallest margin that n cases could ever decide NOT WORSE at level alpha (all
    tied), on [−1, 1]: −best_bound(n, alpha). (Any method: 1 − α^{1/n}, ``floor_margin``.)"""
    return -best_bound(n, alpha)


def floor_bound(n: int, alpha: float) -> float:
    """The best lower bound any level-α method can give after n tied pairs: α^{1/n} − 1."""
    return alpha ** (1 / n) - 1 if n > 0 else -1.0


def floor_margin(n: int, alpha: float) -> float:
    """The smallest margin any level-α method can decide NOT WORSE with n cases."""
    return -floor_bound(n, alpha)


@functools.lru_cache(maxsize=256)
def detectable_drop(
    n: int, *, alpha_worse: float, margin: float, base_rate: float, flip: float = 0.0,
    power: float = 0.8, pairing: str = "flips", alpha_not_worse: float | None = None,
) -> float | None:  # fmt: skip
    """The smallest drop δ in a pass/fail metric's pass rate that a suite of ``n`` cases
    calls WORSE with probability ≥ ``power`` (exact, no simulation), at WORSE level
    ``alpha_worse`` (already divided by the family's size). The model, stated:

    - ``pairing="flips"``: the candidate repeats the baseline's outcome on each case except
      that a share ``flip`` of cases newly pass and ``flip + δ`` newly fail (d ∈ {−1, 0, 1}
      with probabilities flip + δ, ·, flip); needs flip + δ ≤ base_rate;
    - ``pairing="independent"``: the two runs' outcomes are independent, at pass rates
      ``base_rate`` and ``base_rate − δ`` (the most churn two such runs can have).

    The probability is computed by dynamic programming over the counts of −1 and +1 (the
    mixture's wealth depends only on them), pair by pair, with NOT WORSE (at
    ``alpha_not_worse``, default = alpha_worse) absorbing too, since the gate stops there.
    None when even the largest drop the model allows is caught less often than ``power``."""
    a_nw = alpha_worse if alpha_not_worse is None else alpha_not_worse
    if not 0 < base_rate < 1 or not 0 <= flip <= 1 - base_rate:
        raise ValueError(f"base_rate={base_rate}, flip={flip}: need 0 < p < 1, 0 ≤ flip ≤ 1 − p")
    top = base_rate - flip if pairing == "flips" else base_rate
    if top <= margin:
        return None

    def caught(delta: float) -> float:
        return _worse_probability(n, _pass_fail(delta, base_rate, flip, pairing), margin,
                                  a_nw, alpha_worse)  # fmt: skip

    if caught(top) < power:
        return None
    low, high = margin, top  # (WORSE needs the estimate ≤ −m: smaller drops rarely)
    if caught(low) >= power:
        return low
    for _ in range(12):  # (to 0.0002 at worst: the line shows 2 decimals)
        mid = 0.5 * (low + high)
        if caught(mid) >= power:
            high = mid
        else:
            low = mid
    return high


def _pass_fail(delta: float, base: float, flip: float, pairing: str) -> tuple[float, float]:
    """(P(d = −1), P(d = +1)) for a pass/fail metric under the model of ``detectable_drop``."""
    if pairing == "flips":
        return flip + delta, flip
    if pairing == "independent":
        return base * (1 - base + delta), (1 - base) * (base - delta)
    raise ValueError(f"pairing={pairing!r}: 'flips' or 'independent'")


def _worse_probability(n: int, probs: tuple[float, float], margin: float, a_nw: float,
                       a_w: float) -> float:  # fmt: skip
    """P(WORSE within n pairs) for d ∈ {−1, 0, 1} i.i.d. with (P(−1), P(+1)) = probs, by
    dynamic programming over (#−1, #+1, whether K⁻ has reached 1/a_w yet): the mixture's
    wealth depends on the counts only, so the crossings are tabulated once."""
    p_down, p_up = probs
    p_tie = 1.0 - p_down - p_up
    w_hit, z_star = _count_thresholds(n, margin, a_nw, a_w)
    size = n + 1
    a = np.arange(size)[:, None]  # count of −1
    b = np.arange(size)[None, :]  # count of +1
    live = np.zeros((2, size, size))  # [K⁻ crossed yet?, a, b]: the undecided mass
    live[0, 0, 0] = 1.0
    worse = 0.0
    for t in range(1, n + 1):
        new = live * p_tie
        new[:, 1:, :] += live[:, :-1, :] * p_down
        new[:, :, 1:] += live[:, :, :-1] * p_up
        new[1] += np.where(w_hit, new[0], 0.0)
        new[0] = np.where(w_hit, 0.0, new[0])
        w_now = (b - a) <= -margin * t  # the estimate at or below −m
        worse += float(new[1][w_now].sum())
        new[1][w_now] = 0.0
        new[:, (t - a - b) >= z_star] = 0.0  # NOT WORSE reached: the gate stops there
        live = new
    return worse


@functools.lru_cache(maxsize=32)
def _count_thresholds(
    n: int, margin: float, a_nw: float, a_w: float
) -> tuple[np.ndarray, np.ndarray]:
    """For counts (#−1, #+1) = (a, b) of pass/fail differences on [−1, 1]: whether K⁻(0)
    has reached 1/a_w (ties do not move it), and the fewest ties z* with which K⁺(−m)
    reaches 1/a_nw (n + 1: none within n; K⁺ grows with each tie)."""
    size = n + 1
    a = np.arange(size)[:, None, None]
    b = np.arange(size)[None, :, None]
    lw = LOG_WEIGHTS[None, None, :]
    with np.errstate(divide="ignore"):
        down = logsumexp(lw + a * np.log1p(BETS) + b * np.log1p(-BETS), axis=-1)
        y = np.array([margin - 1, margin, 1 + margin]) / (1 - margin)  # at d = −1, 0, +1
        base = lw + a * np.log1p(BETS * y[0]) + b * np.log1p(BETS * y[2])
        tie = np.log1p(BETS * y[1])
        level = math.log(1 / a_nw)
        low = np.zeros((size, size), dtype=int)  # K⁺ below the level with `low` ties
        high = np.full((size, size), n + 1)  # reached with `high` ties (or never)
        never = logsumexp(base + (n + 1) * tie, axis=-1) < level
        for _ in range(int(math.log2(n + 2)) + 2):
            mid = (low + high) // 2
            reached = logsumexp(base + mid[..., None] * tie, axis=-1) >= level
            high = np.where(reached, mid, high)
            low = np.where(reached, low, mid)
        zero = logsumexp(base, axis=-1) >= level
        z_star = np.where(zero, 0, np.where(never, n + 1, high))
    return down >= math.log(1 / a_w), z_star
