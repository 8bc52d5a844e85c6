"""Simulated suites and the floor any level-α test has: one model of paired scores, used by
benchmarks/gate_decisiveness.py, benchmarks/sequential_gate.py and the gate's validity tests
(eval_pipeline_tests/integration/test_sequential_validity.py).

The suite model (``suite``): case i has a difficulty bᵢ ~ Logistic(0, 1), shared by both
versions and by every metric. A version with ability θ answers case i with quality
q = θ − bᵢ + τ·ε (ε ~ N(0, 1), one per answer, shared by that answer's metrics). A metric is
the share of its K rubric points passed, point j passing when q + e_ij + s·η > 0 (e_ij the
point's ease, fixed per case; η per answer and point): K = 1, e = 0, s = 0 is a pass/fail
metric (pass iff q > 0); K = 4 a partial-credit metric in {0, ¼, …, 1} (ties common); a
third metric has K = 2. τ sets how much a case's outcome churns between two runs of the
same agent (τ = 0.45: ≈ 5% of pass/fail cases flip each way). A drop of 0.2 in the
pass/fail metric is a shift of θ calibrated so its pass rate falls by exactly 0.2 (the
other metrics fall with it, through q).

The samplers (``three_point`` …) draw paired differences with a chosen mean directly: the
null cases at Δ = −m and Δ = 0 the validity checks run on.

The floors:
- ``power_floor``: for one metric with pair distribution P and null H0: Δ ≤ −m, the most
  powerful level-α test at n pairs against the single null Q* (the reverse information
  projection of P on H0: dQ*/dP = 1/(1 + c*·y), c* the Kelly bet, so Q* has mean −m
  exactly) has power P(Πᵢ(1 + c* yᵢ) ≥ k), k with Q*(…) = α (Neyman–Pearson). Every
  level-α test of the composite H0 — sequential or not, knowing P or not — has at most that
  power. Monte Carlo with importance weights 1/LR.
- ``pairs_floor``: the fewest pairs on average any level-α test can use to reach a power:
  d(power ‖ α) / KL_inf (Wald 1945, "Sequential tests of statistical hypotheses", Ann.
  Math. Stat. 16(2), in its change-of-measure form), with KL_inf the divergence from P to
  the closest distribution on [−1, 1] with mean −m, in its dual form max over λ of
  E log(1 + λ(X + m)) (Honda & Takemura 2010, "An asymptotically optimal bandit algorithm
  for bounded support models", COLT).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from eval_pipeline.core.scoring.sequential import decision_times

TAU = 0.45  # churn: ≈5% of pass/fail outcomes flip each way between two runs of one agent
THETA = 0.8  # baseline ability: pass/fail pass rate ≈ 0.69
BATCH = 5  # the sequential gate looks after every batch of 5 pairs


@dataclass(frozen=True)
class Metric:
    name: str
    points: int  # rubric points: 1 = pass/fail
    ease: float  # mean ease of a point (0 for pass/fail)
    ease_sd: float
    noise: float  # per-answer, per-point noise


PASS_FAIL = Metric("pass/fail", 1, 0.0, 0.0, 0.0)
PARTIAL = Metric("partial credit", 4, 0.5, 1.0, 0.35)
THIRD = Metric("2-point rubric", 2, 0.3, 1.0, 0.5)
FAMILIES = {1: (PASS_FAIL,), 2: (PASS_FAIL, PARTIAL), 3: (PASS_FAIL, PARTIAL, THIRD)}


def suite(rng: np.random.Generator, runs: int, n: int, metrics: tuple[Metric, ...],
          shift: float = 0.0, tau: float = TAU) -> np.ndarray:  # fmt: skip
    """Paired differences (candidate − baseline), shape (metrics, runs, n); the candidate's
    ability is THETA − shift."""
    u = rng.uniform(1e-12, 1 - 1e-12, (runs, n))
    b = np.log(u / (1 - u))
    eases = [rng.normal(m.ease, m.ease_sd, (runs, n, m.points)) for m in metrics]
    scores = []
    for theta in (THETA, THETA - shift):
        q = theta - b + tau * rng.standard_normal((runs, n))
        scores.append(np.stack([
            ((q[..., None] + e + m.noise * rng.standard_normal(e.shape)) > 0).mean(-1)
            for m, e in zip(metrics, eases, strict=True)
        ]))  # fmt: skip
    return scores[1] - scores[0]


def shift_for_drop(drop: float, tau: float = TAU) -> float:
    """The ability shift that lowers the pass/fail pass rate by ``drop`` (big fixed-seed MC)."""

    def fall(shift: float) -> float:
        d = suite(np.random.default_rng(99), 1, 400_000, (PASS_FAIL,), shift, tau)
        return -float(d.mean())

    return brentq(lambda s: fall(s) - drop, -5.0, 5.0, xtol=1e-4)  # (a rise: drop < 0)


def distribution(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The empirical distribution (values, probabilities) of paired differences."""
    values, counts = np.unique(np.round(d.ravel(), 6), return_counts=True)
    return values, counts / counts.sum()


# --- the sequential gate, on many runs at once ------------------------------------------------


def ceil_batch(t: np.ndarray, n: int) -> np.ndarray:
    """The look at which a decision reached at pair t is seen (batches of BATCH, and the last)."""
    return np.minimum(np.ceil(t / BATCH) * BATCH, n)


def sequential_times(x: np.ndarray, k: int, margin: float, alpha: float):
    """(decision time, is WORSE) per run for one metric (runs, n) as the gate decides it
    (core/scoring/sequential.py ``decision_times``): NOT WORSE at α, WORSE at α/k."""
    t_nw, t_w = decision_times(x, margin=margin, alpha_not_worse=alpha, alpha_worse=alpha / k)
    return np.minimum(t_nw, t_w), t_w <= t_nw


def gate(d: np.ndarray, times, k_family: int | None = None):
    """Run the gate on paired differences (metrics, runs, n): PASS when every metric is NOT
    WORSE, FAIL when any is WORSE, else UNDECIDED at the suite's end. Returns (outcome per
    run: 1 PASS, −1 FAIL, 0 undecided; pairs used; per-metric WORSE by the end)."""
    k, _runs, n = d.shape
    fam = k if k_family is None else k_family
    res = [times(d[j], fam) for j in range(k)]
    when = np.stack([r[0] for r in res])
    worse = np.stack([r[1] for r in res]) & (when <= n)
    nw = ~worse & (when <= n)
    fail_at = np.where(worse, when, n + 1).min(axis=0)
    pass_at = np.where(nw.all(axis=0), when.max(axis=0), n + 1)
    outcome = np.where(fail_at <= n, -1, np.where(pass_at <= n, 1, 0))
    used = np.where(outcome == -1, ceil_batch(fail_at, n),
                    np.where(outcome == 1, ceil_batch(pass_at, n), n))  # fmt: skip
    return outcome, used, worse


def rate(hits: np.ndarray) -> str:
    p = float(np.mean(hits))
    return f"{100 * p:.1f}% ± {100 * math.sqrt(max(p * (1 - p), 1e-12) / hits.size):.1f}"


# --- paired differences with a chosen mean --------------------------------------------------


def three_point(p_down: float, p_up: float):
    """−1 w.p. p_down, +1 w.p. p_up, else 0 (pass/fail flips)."""

    def draw(rng, shape):
        u = rng.random(shape)
        return np.where(u < p_down, -1.0, np.where(u < p_down + p_up, 1.0, 0.0))

    return draw


def independent(p_base: float, p_cand: float):
    """Two independent pass/fail runs."""
    return lambda rng, shape: ((rng.random(shape) < p_cand).astype(float)
                               - (rng.random(shape) < p_base))  # fmt: skip


def partial(p_base: float, p_cand: float, points: int = 4):
    """Two independent partial-credit runs (``points`` rubric points)."""
    return lambda rng, shape: (rng.binomial(points, p_cand, shape)
                               - rng.binomial(points, p_base, shape)) / points  # fmt: skip


def uniform(mean: float, half: float):
    return lambda rng, shape: rng.uniform(mean - half, mean + half, shape)


def skewed(p_down: float, p_quarter: float):
    """−1 w.p. p_down, +0.25 w.p. p_quarter, else 0: a long left tail."""

    def draw(rng, shape):
        u = rng.random(shape)
        return np.where(u < p_down, -1.0, np.where(u < p_down + p_quarter, 0.25, 0.0))

    return draw


def at_margin(m: float) -> dict:
    """Samplers whose mean is −m exactly (a NOT WORSE there is wrong)."""
    return {
        "pass/fail, independent, 0.5 → 0.4": independent(0.5, 0.5 - m),
        "pass/fail, independent, 0.9 → 0.8": independent(0.9, 0.9 - m),
        "pass/fail, independent, 0.15 → 0.05": independent(0.15, 0.15 - m),
        "pass/fail, paired flips 15% / 5%": three_point(0.05 + m, 0.05),
        "ties: −1 w.p. m, else 0 (least favourable)": three_point(m, 0.0),
        "extreme ±1: −1 w.p. (1+m)/2": three_point((1 + m) / 2, (1 - m) / 2),
        "partial credit (4 points), 0.7 → 0.6": partial(0.7, 0.7 - m),
        "continuous, uniform ±0.5": uniform(-m, 0.5),
        "skewed: −1 w.p. 0.15, +¼ w.p. 0.2": skewed(0.05 + m, 0.2),
    }


AT_ZERO = {  # samplers whose mean is 0 exactly (a WORSE there is wrong)
    "pass/fail, independent, 0.5 → 0.5": independent(0.5, 0.5),
    "pass/fail, independent, 0.9 → 0.9": independent(0.9, 0.9),
    "pass/fail, independent, 0.1 → 0.1": independent(0.1, 0.1),
    "pass/fail, paired flips 5% / 5%": three_point(0.05, 0.05),
    "extreme ±1: ½ / ½": three_point(0.5, 0.5),
    "partial credit (4 points), 0.7 → 0.7": partial(0.7, 0.7),
    "continuous, uniform ±0.5": uniform(0.0, 0.5),
    "skewed: −1 w.p. 0.1, +¼ w.p. 0.4": skewed(0.1, 0.4),
}


# --- the floors ----------------------------------------------------------------------------


def kelly(values: np.ndarray, probs: np.ndarray, null: float,
          side: str) -> tuple[float, np.ndarray]:  # fmt: skip
    """The Kelly bet c* (fraction of the largest bet) against H0 mean ≤ null (side above) or
    ≥ null (below) for the pair distribution (values, probs) on [−1, 1], and y at each value."""
    y = (values - null) / (null + 1) if side == "above" else (null - values) / (1 - null)
    res = minimize_scalar(lambda c: -np.sum(probs * np.log1p(c * y)), bounds=(0, 1 - 1e-9),
                          method="bounded")  # fmt: skip
    return float(res.x), y


def power_floor(values: np.ndarray, probs: np.ndarray, null: float, side: str, n: int,
                alpha: float, draws: int = 200_000, seed: int = 7) -> float:  # fmt: skip
    """Upper bound on any level-α test's power with n pairs (module docstring)."""
    c, y = kelly(values, probs, null, side)
    if c >= 1 - 1e-6:  # the projection is degenerate: no positive-probability loss
        return float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(values), size=(draws, n), p=probs)
    llr = np.log1p(c * y)[idx].sum(axis=1)
    order = np.argsort(-llr)
    q_mass = np.cumsum(np.exp(-llr[order])) / draws  # Q*(LR ≥ ·) by importance weights
    cut = int(np.searchsorted(q_mass, alpha, side="right"))
    return cut / draws


def pairs_floor(values: np.ndarray, probs: np.ndarray, null: float, side: str, power: float,
                alpha: float) -> float:  # fmt: skip
    """The fewest pairs on average any level-α test can use to reject H0 with probability
    ``power`` when the pairs come from (values, probs): H0 mean ≤ ``null`` for side
    "above" (NOT WORSE: null −m), mean ≥ ``null`` for "below" (WORSE: null 0). Module
    docstring; inf when (values, probs) lies in H0."""
    xs, at = (np.asarray(values) + 1) / 2, (null + 1) / 2  # on [0, 1]
    gain, most = ((xs - at), 1 / at) if side == "above" else ((at - xs), 1 / (1 - at))

    def loss(lam: float) -> float:
        return -float(np.sum(probs * np.log1p(lam * gain)))

    kl_inf = -minimize_scalar(loss, bounds=(0, most - 1e-9), method="bounded").fun
    d = power * math.log(power / alpha) + (1 - power) * math.log((1 - power) / (1 - alpha))
    return d / kl_inf if kl_inf > 1e-12 else math.inf
