"""Pairs (≈ model calls) to a verdict: the sequential gate against the fixed-n gate, at
equal power and equal real size, with several gated metrics, as a share of the floor.

Simulated suites (benchmarks/simulated.py): by default two gated metrics, a pass/fail and a
partial-credit one, sharing the cases' difficulty (the shipped thresholds gate a pass/fail
metric). A change is a shift of the candidate's ability that lowers the pass/fail pass rate
by Δ (the partial-credit metric falls with it). Three gates, at α = 0.05:

- **sequential**, as shipped (core/scoring/sequential.py): per metric NOT WORSE at α and
  WORSE at α/k; PASS when every metric is NOT WORSE (intersection–union), FAIL when any is
  WORSE; looked at after every batch of 5 pairs, up to the suite's N cases;
- **fixed**, as shipped (checks/paired_gate.py ``_fixed``): after all N pairs, per metric
  the paired t-test's lower bound ≥ −m *and* the anytime-valid bound agreeing; FAIL when a
  t-test says worse and its Holm-adjusted p (over the k metrics; McNemar's exact p for the
  pass/fail one) is < α;
- **t-test at size α**: the paired t-test alone (as most eval tools use it), its critical
  value raised until its real size — a wrong PASS at Δ = −m — is α on this suite model (at
  the nominal critical value it is larger: see the last table).

"% of the floor" is the gate's mean pairs over the fewest pairs on average *any* level-α
test needs for the same power (``simulated.pairs_floor``: Wald's bound with KL_inf; for
PASS, the largest of the metrics' floors, since each must be shown NOT WORSE; for FAIL the
pass/fail metric's at α/k): 100% would be the best possible.

    .venv/bin/python benchmarks/sequential_gate.py [--runs 1000] [--metrics 2]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.optimize import brentq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from simulated import (  # noqa: E402
    FAMILIES,
    PARTIAL,
    at_margin,
    distribution,
    gate,
    kelly,
    pairs_floor,
    power_floor,
    rate,
    sequential_times,
    shift_for_drop,
    suite,
)

from eval_pipeline.core.scoring.sequential import decision_times  # noqa: E402

ALPHA = 0.05
MARGIN = 0.1
STEP = 5  # the fixed n searched in steps of 5


def t_bounds(d: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per metric and run (d: metrics, runs, n): the mean, the t half-width at α, and the
    one-sided p that the candidate is worse (t-test; the sign test when every pair is
    equal, as stats.compare_paired; McNemar's exact p for a pass/fail metric)."""
    n = d.shape[-1]
    mean = d.mean(-1)
    se = d.std(-1, ddof=1) / np.sqrt(n)
    half = stats.t.ppf(1 - alpha, n - 1) * se
    with np.errstate(divide="ignore", invalid="ignore"):
        p = stats.t.cdf(mean / se, n - 1)
    drops, rises = (d < 0).sum(-1), (d > 0).sum(-1)
    exact = stats.binom.sf(drops - 1, drops + rises, 0.5)
    pass_fail = np.all(np.isin(d, (-1.0, 0.0, 1.0)), axis=(1, 2))[:, None]
    p = np.where(pass_fail | (se == 0), np.where(drops + rises > 0, exact, 1.0), p)
    return mean, half, p


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p over the first axis (the metrics), per run."""
    k = p.shape[0]
    order = np.argsort(p, axis=0)
    ranked = np.take_along_axis(p, order, axis=0) * (k - np.arange(k))[:, None]
    adjusted = np.minimum(np.maximum.accumulate(ranked, axis=0), 1.0)
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, axis=0)
    return out


def fixed_gate(d: np.ndarray) -> np.ndarray:
    """The shipped fixed gate on all n pairs: 1 PASS, −1 FAIL, 0 undecided per run."""
    k, _runs, n = d.shape
    mean, half, p = t_bounds(d, ALPHA)
    fails = (mean + half < 0) & (mean <= -MARGIN) & (holm(p) < ALPHA)
    t_nw = np.stack([decision_times(d[j], margin=MARGIN, alpha_not_worse=ALPHA,
                                    alpha_worse=ALPHA / k)[0] for j in range(k)])  # fmt: skip
    passes = (mean - half >= -MARGIN) & (t_nw <= n)
    return np.where(fails.any(0), -1, np.where(passes.all(0), 1, 0))


def t_gate(d: np.ndarray, widen: float = 1.0) -> np.ndarray:
    """The paired t-test alone (its critical value × ``widen``); FAIL: a t-test says worse
    at α/k (Bonferroni) by at least the margin."""
    k = d.shape[0]
    mean, half, _ = t_bounds(d, ALPHA)
    _, half_k, _ = t_bounds(d, ALPHA / k)
    fails = (mean + half_k < 0) & (mean <= -MARGIN)
    passes = (mean - widen * half >= -MARGIN) if np.isfinite(widen) else np.zeros_like(fails)
    return np.where(fails.any(0), -1, np.where(passes.all(0), 1, 0))


@functools.cache
def size_widening(n: int, runs: int = 10_000) -> float:
    """The factor on the t critical value that makes the t-test's wrong PASS at Δ = −m at
    most α at n pairs, for the least favourable of the null distributions we know: the
    validity tests' (``simulated.at_margin``), this suite model's pass/fail and
    partial-credit metrics at Δ = −m, and each metric's reverse information projection Q*
    on Δ = −m (the null the floor is computed against; ``least_favourable``). With k
    metrics a PASS is wrong when one of them is there and the others clearly fine.
    Simulated, fixed seed; inf when no factor can (more than α of the runs have every pair
    equal and pass on a spread of 0)."""
    rng = np.random.default_rng(31 + n)
    model = suite(rng, runs, n, FAMILIES[2], shift_for_drop(MARGIN))
    partial_at = suite(rng, runs, n, (PARTIAL,), shift_for_partial_drop(MARGIN))[0]
    nulls = [draw(rng, (runs, n)) for draw in at_margin(MARGIN).values()]
    for values, probs in pair_distributions(FAMILIES[2], 0.0):
        q = least_favourable(values, probs)
        nulls.append(values[rng.choice(len(values), size=(runs, n), p=q)])
    widest = -np.inf
    for x in [*nulls, model[0], partial_at]:
        mean, half, _ = t_bounds(x[None], ALPHA)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(half > 0, (mean + MARGIN) / half,
                         np.where(mean >= -MARGIN, np.inf, -np.inf))  # fmt: skip
        widest = max(widest, float(np.quantile(z[0], 1 - ALPHA, method="higher")))
    return widest if np.isfinite(widest) else np.inf


def least_favourable(values: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Q*, the reverse information projection of (values, probs) on Δ = −m: dQ*/dP =
    1/(1 + c*·y) with c* the Kelly bet (``simulated.kelly``), renormalised."""
    c, y = kelly(values, probs, -MARGIN, "above")
    q = probs / (1 + c * y)
    return q / q.sum()


@functools.cache
def shift_for_partial_drop(drop: float) -> float:
    """The ability shift that lowers the partial-credit metric's mean by ``drop``."""

    def fall(shift: float) -> float:
        return -float(suite(np.random.default_rng(98), 1, 200_000, (PARTIAL,), shift).mean())

    return brentq(lambda s: fall(s) - drop, -5.0, 5.0, xtol=1e-4)


@functools.cache
def pair_distributions(metrics, shift: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each metric's distribution of paired differences (a large fixed-seed sample, drawn
    once per metrics and shift: every row's floors and the size calibration read it)."""
    big = suite(np.random.default_rng(5), 2000, 200, metrics, shift)
    return [distribution(big[j]) for j in range(len(metrics))]


def floor_for(metrics, shift: float, power: float, outcome: int) -> float:
    """The fewest pairs any level-α test needs for ``power`` (module docstring)."""
    power = min(max(power, 1e-3), 1 - 1e-3)
    found = pair_distributions(metrics, shift)
    if outcome == 1:
        return max(pairs_floor(*p, -MARGIN, "above", power, ALPHA) for p in found)
    return pairs_floor(*found[0], 0.0, "below", power, ALPHA / len(metrics))


def best_power(metrics, shift: float, n: int, outcome: int) -> float:
    """The most power any level-α test has with n pairs (``simulated.power_floor``)."""
    found = pair_distributions(metrics, shift)
    if outcome == 1:
        return min(power_floor(*p, -MARGIN, "above", n, ALPHA, draws=50_000) for p in found)
    return power_floor(*found[0], 0.0, "below", n, ALPHA / len(metrics), draws=50_000)


def share(pairs: float, floor: float) -> str:
    return "—" if not np.isfinite(floor) else f"{100 * pairs / floor:.0f}%"


def verdicts(args, metrics, shifts) -> None:
    k = len(metrics)
    print(f"\n## Verdicts on suites of N cases ({k} gated metrics, margin {MARGIN}, "
          f"α {ALPHA}, {args.runs} runs per row; ± one Monte-Carlo SE)\n")  # fmt: skip
    print(
        "| N | Δ pass/fail | gate | mean pairs | PASS | FAIL | UNDECIDED "
        "| right verdict, % of the most any test gets at N | pairs, % of the floor |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for n in args.cases:
        widen = size_widening(n)
        for i, (label, shift) in enumerate(shifts.items()):
            d = suite(np.random.default_rng(1000 * n + i), args.runs, n, metrics, shift)
            seq, used, _ = gate(d, lambda x, kk: sequential_times(x, kk, MARGIN, ALPHA))
            rows = (("sequential", seq, used.mean()), ("fixed", fixed_gate(d), n),
                    (f"t-test at size α (×{widen:.2f})", t_gate(d, widen), n))  # fmt: skip
            right = 1 if label == "0" else -1 if label != "−m" else 0
            most = best_power(metrics, shift, n, right) if right else np.nan
            for name, out, pairs in rows:
                power = float(np.mean(out == right)) if right else 0.0
                floor = floor_for(metrics, shift, power, right) if right else np.inf
                shares = " | ".join(rate(out == v) for v in (1, -1, 0))
                of_most = f"{100 * power / most:.0f}% (of {100 * most:.0f}%)" if right else "—"
                print(f"| {n} | {label} | {name} | {pairs:.1f} | {shares} | {of_most} | "
                      f"{share(pairs, floor)} |")  # fmt: skip


def equal_power(args) -> None:
    """A neutral change: the sequential gate on a suite of ``cap`` cases, and the n each
    fixed gate needs to say PASS as often."""
    print(f"\n## Equal power, a neutral change (sequential on suites of {args.cap} cases; "
          f"the fixed n searched in steps of {STEP})\n")  # fmt: skip
    print("| gated metrics | PASS | sequential pairs | % of the floor | fixed n | % of the floor "
          "| t-test at size α: n | % of the floor | floor |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in args.metrics_list:
        metrics = FAMILIES[k]
        d = suite(np.random.default_rng(600 + k), args.runs, args.cap, metrics)
        out, used, _ = gate(d, lambda x, kk: sequential_times(x, kk, MARGIN, ALPHA))
        power = float(np.mean(out == 1))
        floor = floor_for(metrics, 0.0, power, 1)
        found = {}
        for name in ("fixed", "t-test"):
            n = STEP
            while n < 10 * args.cap:
                sample = suite(np.random.default_rng(700 + n), args.runs, n, metrics)
                said = (fixed_gate(sample) if name == "fixed"
                        else t_gate(sample, size_widening(n)))  # fmt: skip
                if np.mean(said == 1) >= power:
                    break
                n += STEP
            found[name] = n
        print(f"| {k} | {100 * power:.1f}% | {used.mean():.1f} | {share(used.mean(), floor)} | "
              f"{found['fixed']} | {share(found['fixed'], floor)} | {found['t-test']} | "
              f"{share(found['t-test'], floor)} | {floor:.1f} |")  # fmt: skip


def real_size(args, metrics, shift_m: float) -> None:
    print(f"\n## Real size: a wrong PASS when a gated metric is worse by exactly the margin "
          f"(bound α = {ALPHA}; this suite model with {len(metrics)} gated metrics, and the "
          f"least favourable of simulated.at_margin's distributions, one metric)\n")  # fmt: skip
    print("| N | sequential | fixed | t-test (nominal) | least favourable: t-test (nominal) "
          "| least favourable: fixed |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|")
    for n in args.cases:
        rng = np.random.default_rng(900 + n)
        d = suite(rng, 4 * args.runs, n, metrics, shift_m)
        seq, _, _ = gate(d, lambda x, kk: sequential_times(x, kk, MARGIN, ALPHA))
        worst = {}
        for name, draw in at_margin(MARGIN).items():
            x = draw(rng, (1, 4 * args.runs, n))
            for gate_name, said in (("t", t_gate(x)), ("fixed", fixed_gate(x))):
                hits = said == 1
                if hits.mean() >= worst.get(gate_name, (-1.0,))[0]:
                    worst[gate_name] = (float(hits.mean()), name, hits)
        print(f"| {n} | {rate(seq == 1)} | {rate(fixed_gate(d) == 1)} | {rate(t_gate(d) == 1)} | "
              f"{rate(worst['t'][2])} ({worst['t'][1]}) | {rate(worst['fixed'][2])} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--metrics", type=int, default=2, choices=(1, 2, 3))
    parser.add_argument("--cases", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--cap", type=int, default=200, help="suite size, equal-power table")
    args = parser.parse_args()
    args.metrics_list = (1, 2, 3)
    metrics = FAMILIES[args.metrics]
    started = time.perf_counter()
    shifts = {"0": 0.0, "−m": shift_for_drop(MARGIN), "−2m": shift_for_drop(2 * MARGIN),
              "−0.3": shift_for_drop(0.3)}  # fmt: skip
    verdicts(args, metrics, shifts)
    real_size(args, metrics, shifts["−m"])
    equal_power(args)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
