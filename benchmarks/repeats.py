"""Variance-aware repeats of the sequential gate: decisions and model calls, by policy.

Simulated runs of a pass/fail metric on a suite of ``--cases`` cases, half of them flaky
(pass rate 0.3–0.8), half always passing; the baseline ran each case 3 times; the
candidate passes each case ``drop`` less often (Δ = −drop exactly). The sequential gate
(``decide``, α = 0.05) looks after every batch of 10 cases and stops when it decides.
Policies for the repeats, once the cases left look too few to decide (the rule of
``evaluation.runs_short``: the gate's "about N more pairs" exceeds the cases left, or it
cannot tell):

- ``none``: every case once (``--max-repeats 1``);
- ``baseline flaky``: ours: each further case whose baseline repeats disagree runs 3
  times, the others once (``evaluation.Repeats``);
- ``candidate failed``: a further case whose first answer failed runs 3 times: chosen by
  the candidate's own outcome, which lifts its per-case means (biased, shown for contrast);
- ``all flaky, from the start``: the baseline's flaky cases run 3 times from the first case.

    .venv/bin/python benchmarks/repeats.py [--runs 300] [--cases 100] [--margin 0.1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from eval_pipeline.core.scoring.sequential import Decision, first_decision, more_to_decide

ALPHA = 0.05
BATCH = 10
MOST = 3
POLICIES = ("none", "baseline flaky", "candidate failed", "all flaky, from the start")


def simulate(rng: np.random.Generator, policy: str, *, cases: int, margin: float,
             drop: float) -> tuple[Decision, int]:  # fmt: skip
    """One sequential run: the gate's decision and the candidate's model calls."""
    p = np.where(rng.random(cases) < 0.5, rng.uniform(0.3, 0.8, cases), 1.0)
    baseline = rng.random((cases, 3)) < p[:, None]
    flaky = baseline.min(axis=1) != baseline.max(axis=1)
    answers = rng.random((cases, MOST)) < np.clip(p - drop, 0, 1)[:, None]
    if policy == "none":
        chosen = np.zeros(cases, dtype=bool)
    else:  # the cases a policy repeats once the run is short
        chosen = ~answers[:, 0] if policy == "candidate failed" else flaky
    short = policy == "all flaky, from the start"
    pairs: list[float] = []
    calls = 0
    for start in range(0, cases, BATCH):
        for i in range(start, min(cases, start + BATCH)):
            repeats = MOST if short and chosen[i] else 1
            pairs.append(float(answers[i, :repeats].mean() - baseline[i].mean()))
            calls += repeats
        # decide()'s decision and its "about N more pairs", without the bounds it reports
        x = np.array(pairs)
        decision, _ = first_decision(x, margin=margin, alpha_not_worse=ALPHA,
                                     alpha_worse=ALPHA)  # fmt: skip
        if decision is not Decision.CONTINUE:
            return decision, calls
        if policy != "all flaky, from the start":
            more = more_to_decide(x, margin=margin, alpha_not_worse=ALPHA, alpha_worse=ALPHA)
            short = more is None or more > cases - len(pairs)
    return Decision.CONTINUE, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--margin", type=float, default=0.1)
    args = parser.parse_args()
    started = time.perf_counter()
    m = args.margin
    print("| Δ | policy | mean calls | WORSE | NOT WORSE | UNDECIDED |")
    print("|---|---|---:|---:|---:|---:|")
    for name, drop in (("0", 0.0), ("−m", m), ("−2m", 2 * m)):
        for policy in POLICIES:
            rng = np.random.default_rng(2026)  # the same suites for every policy
            runs = [simulate(rng, policy, cases=args.cases, margin=m, drop=drop)
                    for _ in range(args.runs)]  # fmt: skip
            share = {d: sum(r[0] is d for r in runs) / len(runs) for d in Decision}
            print(f"| {name} | {policy} | {np.mean([r[1] for r in runs]):.1f} | "
                  f"{share[Decision.WORSE]:.1%} | {share[Decision.NOT_WORSE]:.1%} | "
                  f"{share[Decision.CONTINUE]:.1%} |")  # fmt: skip
    print(f"\n{args.runs} runs per row, {args.cases} cases, margin {m}, α = {ALPHA}; "
          f"{time.perf_counter() - started:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
