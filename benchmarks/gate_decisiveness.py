"""Simulated suites: the sequential gate (core/scoring/sequential.py) against the one of an
earlier commit (``--before``, default 162c8b7: Bonferroni on both sides, predictable plug-in
bets at c = ½, a grid) and against the floor any level-α test has. Prints markdown tables
(a) pairs to NOT WORSE when nothing moved, (b) a neutral change: PASS, (c) a drop of 0.2:
FAIL, (d) validity under peeking, (f) "about N more pairs"; every rate with its
Monte-Carlo SE, and each figure as a share of the floor.

The suite model and the floors are benchmarks/simulated.py's (its docstring). For PASS
(every metric NOT WORSE) the floor is the smallest of the metrics' floors (an upper bound).
For identical scores the floor is exact: (1 − m)ⁿ ≤ α.

    .venv/bin/python benchmarks/gate_decisiveness.py [--runs 4000] [--quick] [--before REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from simulated import (  # noqa: E402
    AT_ZERO,
    BATCH,
    FAMILIES,
    PARTIAL,
    PASS_FAIL,
    TAU,
    at_margin,
    distribution,
    gate,
    power_floor,
    rate,
    sequential_times,
    shift_for_drop,
    suite,
)  # fmt: skip

from eval_pipeline.core.scoring import sequential as new  # noqa: E402

BEFORE = "162c8b7"  # the gate before issue 34


def load_before(rev: str):
    """core/scoring/sequential.py as it was at ``rev`` (git show), as a module."""
    source = subprocess.run(["git", "-C", str(ROOT), "show",
                             f"{rev}:eval_pipeline/core/scoring/sequential.py"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="gate-before-"))
    (folder / "old_sequential.py").write_text(source)
    spec = importlib.util.spec_from_file_location("old_sequential", folder / "old_sequential.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_sequential"] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


old = None  # set by main

ALPHA = 0.05
MARGIN = 0.1


# --- the gates, on many runs at once ---------------------------------------------------------


def new_metric_times(x: np.ndarray, k: int):
    """The gate now (simulated.sequential_times) at this benchmark's margin and α."""
    return sequential_times(x, k, MARGIN, ALPHA)


def old_metric_times(x: np.ndarray, k: int, margin: float = MARGIN, alpha: float = ALPHA):
    """The current module as gate.py uses it: every bound at α/k (Bonferroni on both
    sides), grid of 1001, looked at after each batch (its decide() rule)."""
    runs, n = x.shape
    looks = np.unique(np.r_[np.arange(BATCH, n + 1, BATCH), n])
    when = np.full(runs, n + 1)
    worse = np.zeros(runs, dtype=bool)
    level = alpha / k
    for r in range(runs):
        lower, upper = old.confidence_sequence(x[r], alpha=level, lo=-1, hi=1)
        for t in looks:
            if upper[t - 1] < 0 and x[r, :t].mean() <= -margin:
                when[r], worse[r] = t, True
                break
            if lower[t - 1] > -margin:
                when[r] = t
                break
    return when, worse


# --- the tables ----------------------------------------------------------------------------


def table_a() -> None:
    print("\n## (a) Identical scores (all d = 0): pairs until NOT WORSE\n")
    print(
        "| margin | floor (any level-α test) | new (any number of metrics) | ×floor "
        "| current, 1 metric | current, 2 metrics | current, 3 metrics |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for m in (0.1, 0.05, 0.02):
        floor = new.floor_pairs(m, ALPHA)
        mine = new.pairs_to_clear(m, ALPHA)
        cur = [old.pairs_to_clear(m, ALPHA, k) for k in (1, 2, 3)]
        print(
            f"| {m} | {floor} | {mine} | {mine / floor:.2f} | " + " | ".join(map(str, cur)) + " |"
        )
    print("\n(Deterministic: no Monte-Carlo error. Target with 2 gated metrics: ≤ 37/76/193.)")
    print("\nWhat n tied cases can show (one-sided 95%, anytime-valid):\n")
    print("| n | best lower bound, new | best any test | finest margin, new | finest, any test |")
    print("|---:|---:|---:|---:|---:|")
    for n in (20, 40, 50, 100, 200):
        print(
            f"| {n} | {new.best_bound(n, ALPHA):+.4f} | {new.floor_bound(n, ALPHA):+.4f} | "
            f"{new.finest_margin(n, ALPHA):.4f} | {new.floor_margin(n, ALPHA):.4f} |"
        )


def table_b(runs: int, old_runs: int) -> None:
    print(
        f"\n## (b) A neutral change (θ unchanged; churn τ = {TAU}): PASS within the suite, "
        f"margin {MARGIN}\n"
    )
    print(
        "| gated metrics | cases | new PASS | new mean pairs | current PASS | floor (PASS ≤) "
        "| new / floor |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for k in (1, 2, 3):
        for n in (40, 50, 100, 200) if k == 2 else (50,):
            rng = np.random.default_rng(100 + 10 * k + n)
            d = suite(rng, runs, n, FAMILIES[k])
            out, used, _ = gate(d, new_metric_times)
            out_old, _, _ = gate(d[:, :old_runs], old_metric_times)
            floors = []
            big = suite(np.random.default_rng(5), 2000, 200, FAMILIES[k])
            for j in range(k):
                v, p = distribution(big[j])
                floors.append(power_floor(v, p, -MARGIN, "above", n, ALPHA))
            floor = min(floors)
            mine = float(np.mean(out == 1))
            print(
                f"| {k} | {n} | {rate(out == 1)} | {used.mean():.1f} | {rate(out_old == 1)} | "
                f"{100 * floor:.1f}% | {mine / floor:.2f} |"
            )
    print("\nChurn sensitivity, 2 gated metrics, 50 cases:\n")
    print("| τ | pass/fail flips each way | new PASS | current PASS | floor (PASS ≤) |")
    print("|---:|---:|---:|---:|---:|")
    for tau in (0.25, 0.45, 0.8):
        rng = np.random.default_rng(int(tau * 1000))
        d = suite(rng, runs, 50, FAMILIES[2], tau=tau)
        out, _, _ = gate(d, new_metric_times)
        out_old, _, _ = gate(d[:, :old_runs], old_metric_times)
        big = suite(np.random.default_rng(5), 2000, 200, FAMILIES[2], tau=tau)
        floor = min(power_floor(*distribution(big[j]), -MARGIN, "above", 50, ALPHA) for j in (0, 1))
        flips = float(np.mean(big[0] < 0))
        print(
            f"| {tau} | {100 * flips:.1f}% | {rate(out == 1)} | {rate(out_old == 1)} | "
            f"{100 * floor:.1f}% |"
        )


def table_c(runs: int, old_runs: int) -> None:
    print("\n## (c) The pass/fail metric drops by 0.2: FAIL (WORSE) within the suite\n")
    print(
        "| τ (churn) | gated metrics | cases | new: pass/fail WORSE | new: FAIL (any WORSE) "
        "| new mean pairs | current: pass/fail WORSE | current: FAIL | floor, pass/fail (≤) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tau in (0.45, 0.8):
        shift = shift_for_drop(0.2, tau)
        for k in (1, 2, 3):
            for n in (50, 100) if k == 2 else (50,):
                rng = np.random.default_rng(200 + 10 * k + n + int(tau * 100))
                d = suite(rng, runs, n, FAMILIES[k], shift, tau)
                out, used, worse = gate(d, new_metric_times)
                out_old, _, worse_old = gate(d[:, :old_runs], old_metric_times)
                big = suite(np.random.default_rng(6), 2000, 200, (PASS_FAIL,), shift, tau)
                floor = power_floor(*distribution(big[0]), 0.0, "below", n, ALPHA / k)
                print(
                    f"| {tau} | {k} | {n} | {rate(worse[0])} | {rate(out == -1)} | "
                    f"{used.mean():.1f} | {rate(worse_old[0])} | {rate(out_old == -1)} | "
                    f"{100 * floor:.1f}% |"
                )
    print(
        "\nThe smallest drop a suite catches (WORSE) with 80% probability, exact "
        "(sequential.detectable_drop; pass/fail at base rate 0.7, 2 metrics: WORSE at α/2):\n"
    )
    print("| cases | churn 0 (one-way) | churn 5% each way | independent runs |")
    print("|---:|---:|---:|---:|")
    for n in (40, 50, 100, 200):
        row = [new.detectable_drop(n, alpha_worse=ALPHA / 2, margin=MARGIN, base_rate=0.7,
                                   flip=f, alpha_not_worse=ALPHA) for f in (0.0, 0.05)]  # fmt: skip
        row.append(new.detectable_drop(n, alpha_worse=ALPHA / 2, margin=MARGIN, base_rate=0.7,
                                       pairing="independent", alpha_not_worse=ALPHA))  # fmt: skip
        print(f"| {n} | " + " | ".join("—" if v is None else f"{v:.3f}" for v in row) + " |")


def table_d(runs: int, old_runs: int, horizon: int = 200) -> None:
    m = MARGIN
    cases_at_margin, cases_at_zero = at_margin(m).items(), AT_ZERO.items()
    print(
        f"\n## (d) Validity, looking after every batch of {BATCH} up to {horizon} pairs "
        f"(α = {ALPHA}; bound: level + 3 SE)\n"
    )
    print(
        f"Wrong NOT WORSE at Δ = −m = −{m} exactly (NOT WORSE at α = {ALPHA}; the current "
        f"module at α/2, as with 2 gated metrics):\n"
    )
    print("| distribution | mean (check) | new | new ≤ α + 3SE | current (α/2) |")
    print("|---|---:|---:|:---:|---:|")
    rng = np.random.default_rng(404)
    for name, draw in cases_at_margin:
        x = np.clip(draw(rng, (runs, horizon)), -1, 1)
        t_nw, _ = new.decision_times(x, margin=m, alpha_not_worse=ALPHA, alpha_worse=ALPHA)
        seen = t_nw <= horizon  # (reached at pair t, seen at the next look, ≤ horizon)
        bound = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
        when, worse = old_metric_times(x[:old_runs], 2, m)
        print(
            f"| {name} | {x.mean():+.4f} | {rate(seen)} | "
            f"{'yes' if seen.mean() <= bound else 'NO'} | {rate((when <= horizon) & ~worse)} |"
        )
    print(
        f"\nWrong WORSE at Δ = 0 (2 gated metrics: WORSE at α/2 = {ALPHA / 2} each; the "
        f"current module at α/2 too):\n"
    )
    print("| distribution | mean (check) | new | new ≤ α/2 + 3SE | current (α/2) |")
    print("|---|---:|---:|:---:|---:|")
    for name, draw in cases_at_zero:
        x = np.clip(draw(rng, (runs, horizon)), -1, 1)
        _, t_w = new.decision_times(x, margin=m, alpha_not_worse=ALPHA, alpha_worse=ALPHA / 2)
        hit = t_w <= horizon
        bound = ALPHA / 2 + 3 * math.sqrt(ALPHA / 2 * (1 - ALPHA / 2) / runs)
        when, worse = old_metric_times(x[:old_runs], 2, m)
        print(
            f"| {name} | {x.mean():+.4f} | {rate(hit)} | {'yes' if hit.mean() <= bound else 'NO'} "
            f"| {rate((when <= horizon) & worse)} |"
        )
    print(
        "\nFamily-wise: a neutral change on the suite model, any metric WORSE within "
        f"{horizon} cases (WORSE at α/k each), and the raw test martingale K⁻ ever ≥ k/α "
        "(without the estimate ≤ −m condition):\n"
    )
    print(
        "| gated metrics | any WORSE (new) | any K⁻ crossing (new) | bound α + 3SE "
        "| any WORSE (current) |"
    )
    print("|---:|---:|---:|---:|---:|")
    for k in (2, 3):
        d = suite(np.random.default_rng(500 + k), runs, horizon, FAMILIES[k])
        _, _, worse = gate(d, new_metric_times)
        cross = np.zeros(runs, dtype=bool)
        for j in range(k):
            path = new.log_wealth(d[j], 0.0, side="below")
            cross |= (path >= math.log(k / ALPHA)).any(axis=1)
        _, _, worse_old = gate(d[:, :old_runs], old_metric_times)
        bound = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
        print(
            f"| {k} | {rate(worse.any(axis=0))} | {rate(cross)} | {100 * bound:.1f}% | "
            f"{rate(worse_old.any(axis=0))} |"
        )


def table_f(runs: int, n0: int = 20, most: int = 400) -> None:
    """How good is "about N more pairs would decide"? Runs of one metric, undecided after n0
    pairs, are continued (the same run, up to ``most`` pairs): the share decided within the
    N said (the new look-ahead is a median, so ≈ 50% is calibrated), and the median of
    (pairs actually needed) / N."""
    print(
        f'\n## (f) "About N more pairs would decide": checked on undecided runs '
        f"(after {n0} pairs, one metric, α = {ALPHA}, looking up to {most} pairs)\n"
    )
    print(
        "| pairs | runs undecided | new: decided within N said | new: median actual/N "
        "| current: decided within N said | current: median actual/N |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    cases = (("pass/fail, neutral (τ 0.45)", lambda r: suite(r, runs, most, (PASS_FAIL,))[0]),
             ("partial credit, neutral", lambda r: suite(r, runs, most, (PARTIAL,))[0]),
             ("pass/fail, improved by 0.1", lambda r: suite(r, runs, most, (PASS_FAIL,),
                                                           -shift_for_drop(-0.1))[0]))  # fmt: skip
    for name, make in cases:
        d = make(np.random.default_rng(700))
        t_nw, t_w = new.decision_times(d, margin=MARGIN, alpha_not_worse=ALPHA, alpha_worse=ALPHA)
        t_new = np.minimum(t_nw, t_w)
        open_runs = np.nonzero(t_new > n0)[0]
        said_new, said_old, real_old = [], [], []
        for r in open_runs:
            said_new.append(new.more_to_decide(d[r, :n0], margin=MARGIN, alpha_not_worse=ALPHA,
                                               alpha_worse=ALPHA, most=most))  # fmt: skip
            said_old.append(old._more_to_decide(d[r, :n0], -1.0, 1.0, MARGIN, ALPHA, most))
            lower, upper = old.confidence_sequence(d[r], alpha=ALPHA, lo=-1, hi=1)
            hit = (lower > -MARGIN) | ((upper < 0) & (np.cumsum(d[r]) / np.arange(1, most + 1)
                                                      <= -MARGIN))  # fmt: skip
            real_old.append(int(np.argmax(hit)) + 1 if hit.any() else most + 1)

        def score(said, real):
            pairs = [(s, t - n0) for s, t in zip(said, real, strict=True) if s]
            within = np.array([t <= s for s, t in pairs])
            ratio = np.array([t / s for s, t in pairs])
            return (f"{rate(within)} (of {len(pairs)} with an N)", f"{np.median(ratio):.2f}")

        a, b = score(said_new, t_new[open_runs])
        c, e = score(said_old, real_old)
        print(f"| {name} | {len(open_runs)} | {a} | {b} | {c} | {e} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000, help="runs per row, new gate")
    parser.add_argument("--old-runs", type=int, default=1000, help="runs per row, current gate")
    parser.add_argument("--quick", action="store_true", help="1000 / 300 runs")
    parser.add_argument("--tables", default="abcdf")
    parser.add_argument("--before", default=BEFORE, help="the commit whose gate to compare")
    args = parser.parse_args()
    global old
    old = load_before(args.before)
    runs, old_runs = (1000, 300) if args.quick else (args.runs, args.old_runs)
    started = time.perf_counter()
    print(
        f"α = {ALPHA}, margin = {MARGIN}, looks after every {BATCH} pairs; "
        f"{runs} runs per row for the new gate, {old_runs} (the same suites' first) for the "
        "current one. ± is one Monte-Carlo SE."
    )
    for key, table in (("a", lambda: table_a()), ("b", lambda: table_b(runs, old_runs)),
                       ("c", lambda: table_c(runs, old_runs)),
                       ("d", lambda: table_d(runs, old_runs)),
                       ("f", lambda: table_f(min(runs, 400)))):  # fmt: skip
        if key in args.tables:
            table()
            print(f"\n({time.perf_counter() - started:.0f} s so far)", flush=True)


if __name__ == "__main__":
    main()
