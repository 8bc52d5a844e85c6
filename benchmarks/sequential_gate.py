"""Pairs (≈ model calls) to a verdict: the sequential gate against the fixed-n gate.

Simulated runs of a pass/fail metric (baseline pass rate 0.9) at effect sizes Δ = 0,
−margin, −2·margin and a large drop. The fixed-n gate runs the n that gives its t-test
80% power against a drop of 2·margin (``stats.cases_needed``) and decides once; the
sequential gate draws batches of 5 and stops when its confidence sequence decides, up to
``--cap`` × that n. Both at α = 0.05. Printed: the mean pairs used, and how often each
verdict came out.

Then, for the rows with no drop, the comparison at equal power: the fixed n whose gate
says NOT WORSE as often as the sequential gate did, and the fewest pairs *any* level-α
test (sequential or not, knowing the alternative or not) can use on average for that
power: d(power ‖ α) / KL_inf, with d the binary divergence (Wald's lower bound on the
expected sample number, Wald 1945, "Sequential tests of statistical hypotheses", Ann.
Math. Stat. 16(2), in its change-of-measure form), and KL_inf the divergence from the
pairs' distribution to the closest distribution on [−1, 1] with mean −margin, computed in
its dual form max over λ of E log(1 + λ(X − μ₀)) (Honda & Takemura 2010, "An
asymptotically optimal bandit algorithm for bounded support models", COLT).

    .venv/bin/python benchmarks/sequential_gate.py [--runs 400] [--margin 0.1] [--cap 3]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.optimize import minimize_scalar

from eval_pipeline.core.scoring.sequential import decision_times
from eval_pipeline.core.scoring.stats import cases_needed, compare_paired

ALPHA = 0.05
BASE_RATE = 0.9
BATCH = 5


def pairs(rng: np.random.Generator, drop: float, n: int, flip: float | None):
    """(baseline, candidate) pass/fail outcomes of n items. ``flip`` None: independent
    draws (the two runs share nothing); else paired: the candidate repeats the baseline's
    outcome except on a share ``flip`` of items that newly pass and ``flip + drop`` that
    newly fail (an equivalent agent whose answers differ a little)."""
    base = (rng.random(n) < BASE_RATE).astype(float)
    if flip is None:
        return base, (rng.random(n) < BASE_RATE - drop).astype(float)
    u = rng.random(n)
    cand = np.where(base == 1, u >= (flip + drop) / BASE_RATE, u < flip / (1 - BASE_RATE))
    return base, cand.astype(float)


def fixed(rng: np.random.Generator, drop: float, n: int, margin: float,
          flip: float | None = None) -> tuple[str, int]:  # fmt: skip
    base, cand = pairs(rng, drop, n, flip)
    decision = compare_paired(base, cand, margin=margin, alpha=ALPHA).decision
    return {"fail": "WORSE", "pass": "NOT WORSE", "warn": "UNDECIDED"}[decision], n


def sequential(rng: np.random.Generator, drop: float, cap: int, margin: float,
               flip: float | None = None) -> tuple[str, int]:  # fmt: skip
    """The sequential gate's decision (core/scoring/sequential.py ``decision_times``, one
    metric), looked at after every batch of BATCH pairs, up to ``cap``."""
    base, cand = pairs(rng, drop, cap, flip)
    t_nw, t_w = decision_times((cand - base)[None, :], margin=margin, alpha_not_worse=ALPHA,
                               alpha_worse=ALPHA)  # fmt: skip
    t_nw, t_w = int(t_nw[0]), int(t_w[0])
    first = min(t_nw, t_w)
    if first > cap:
        return "UNDECIDED", cap
    looked = min(cap, -(-first // BATCH) * BATCH)  # the batch in which it was seen
    return ("WORSE" if t_w <= t_nw else "NOT WORSE"), looked


def differences(drop: float, flip: float | None) -> dict[float, float]:
    """The distribution of a pair's difference (candidate − baseline) that ``pairs`` draws."""
    if flip is None:
        worse, better = BASE_RATE * (1 - BASE_RATE + drop), (1 - BASE_RATE) * (BASE_RATE - drop)
    else:
        worse, better = flip + drop, flip
    return {-1.0: worse, 0.0: 1 - worse - better, 1.0: better}


def least_pairs(diffs: dict[float, float], margin: float, power: float) -> float:
    """The fewest pairs on average any level-α test can use to say NOT WORSE with
    probability ``power`` when the pairs come from ``diffs`` (module docstring)."""
    xs = {(d + 1) / 2: p for d, p in diffs.items() if p > 0}  # on [0, 1]
    null = (1 - margin) / 2

    def loss(lam: float) -> float:
        return -sum(p * math.log1p(lam * (x - null)) for x, p in xs.items())

    kl_inf = -minimize_scalar(loss, bounds=(0, 1 / null - 1e-9), method="bounded").fun
    d = power * math.log(power / ALPHA) + (1 - power) * math.log((1 - power) / (1 - ALPHA))
    return d / kl_inf


def fixed_at_power(rng: np.random.Generator, power: float, margin: float, start: int,
                   flip: float | None, runs: int) -> int:  # fmt: skip
    """The fixed gate's n (in steps of 5) that says NOT WORSE at no drop at least as often."""
    n = start
    while n < 20 * start:
        said = [fixed(rng, 0.0, n, margin, flip)[0] for _ in range(runs)]
        if said.count("NOT WORSE") / runs >= power:
            return n
        n += 5
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--margin", type=float, default=0.1)
    parser.add_argument("--cap", type=float, default=3.0, help="sequential cap, × fixed n")
    args = parser.parse_args()
    m = args.margin
    sd = math.sqrt(2 * BASE_RATE * (1 - BASE_RATE) + 2 * m * (1 - 2 * m))  # at Δ = −2m, roughly
    n_fixed = cases_needed(sd, 2 * m, ALPHA) or 5
    cap = int(args.cap * n_fixed)
    rng = np.random.default_rng(2026)
    started = time.perf_counter()
    print(f"margin {m}, α {ALPHA}, baseline pass rate {BASE_RATE}, {args.runs} runs per row; "
          f"fixed n = {n_fixed} (80% power at Δ = −{2 * m:g}), sequential cap {cap}\n")  # fmt: skip
    print("| Δ | gate | mean pairs | WORSE | NOT WORSE | UNDECIDED | pairs vs fixed |")
    print("|---|---|---:|---:|---:|---:|---:|")
    cases = (("0", 0.0, None), ("0, paired (5% flip each way)", 0.0, 0.05), ("−m", m, None),
             ("−2m", 2 * m, None), ("large (−0.6)", 0.6, None))  # fmt: skip
    equal: list[tuple[str, float | None, float, float]] = []
    for label, drop, flip in cases:
        rows = {}
        for name in ("fixed", "sequential"):
            results = [
                fixed(rng, drop, n_fixed, m, flip)
                if name == "fixed"
                else sequential(rng, drop, cap, m, flip)
                for _ in range(args.runs)
            ]
            verdicts = [v for v, _ in results]
            mean = float(np.mean([n for _, n in results]))
            rows[name] = mean
            if name == "sequential" and drop == 0:
                equal.append((label, flip, verdicts.count("NOT WORSE") / len(verdicts), mean))
            shares = [verdicts.count(v) / len(verdicts) for v in ("WORSE", "NOT WORSE",
                                                                  "UNDECIDED")]  # fmt: skip
            ratio = f"{mean / rows['fixed']:.2f}" if name == "sequential" else "1"
            print(f"| {label} | {name} | {mean:.1f} | {shares[0]:.1%} | {shares[1]:.1%} | "
                  f"{shares[2]:.1%} | {ratio} |")  # fmt: skip
    print("\nAt equal power, no drop:\n")
    print("| Δ | NOT WORSE | sequential pairs | fixed n, same power | 40% fewer than that "
          "| fewest pairs any test needs |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for label, flip, power, mean in equal:
        n = fixed_at_power(rng, power, m, n_fixed, flip, args.runs)
        least = least_pairs(differences(0.0, flip), m, power)
        print(f"| {label} | {power:.1%} | {mean:.1f} | {n} | {0.6 * n:.1f} | {least:.1f} |")
    print(f"\n({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
