"""Where the verdict went wrong around a sound gate (issue 44), by simulation: the fixed
gate's real size on both sides next to the sequential gate's, a prompt fixed on the first
cases a gate looked at, and what a reducer does to the margin. Prints markdown tables;
every rate is over ``--runs`` simulated runs, ± one Monte-Carlo SE. The tests
(test_fixed_gate_validity.py, test_sequential_validity.py, test_gate_validity.py) call the
same functions on fewer runs.

- **Fixed gate, size.** Differences drawn from a null: Δ = 0 exactly (a wrong FAIL) or
  Δ = −margin (a wrong PASS), on the full suite, one gated metric. "t only" is the fixed
  gate before issue 44 (its FAIL on the t interval, or the sign test where every pair moved
  alike); "backed" is ``paired_gate.fixed_decision`` (each side backed by the anytime-valid
  tests at one look); "sequential" is the sequential gate looking after every pair.
- **Prefix tuning.** 200 cases; the candidate ties the baseline on the first K cases the
  last candidate's gate drew and is worse elsewhere so that it is worse by exactly the
  margin over the suite; how often the sequential gate passes it, with the draw seeded by
  the dataset alone (before) and by the candidate too (``plan.draw_order``).
- **Reducers.** Every answer of the candidate passes ``margin`` less often than the
  baseline's, k answers a case, 200 cases; how often the sequential gate passes it on the
  reducer's scale, and the drop on that scale (``reducers.per_answer_drop``).

    .venv/bin/python benchmarks/gate_validity.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval_pipeline.core.evaluation.plan import draw_order  # noqa: E402
from eval_pipeline.core.scoring import sequential as seq  # noqa: E402
from eval_pipeline.core.scoring.checks.paired_gate import fixed_decision  # noqa: E402
from eval_pipeline.core.scoring.reducers import _reduce, per_answer_drop  # noqa: E402
from eval_pipeline.core.scoring.stats import compare_paired  # noqa: E402
from eval_pipeline.core.store.records import RunRecord  # noqa: E402
from eval_pipeline.core.suites.cases import GoldenCase  # noqa: E402

ALPHA, MARGIN = 0.05, 0.1


def two_point(up: float, p_up: float) -> tuple[list[float], list[float]]:
    """+``up`` with probability ``p_up``, else what makes the mean 0."""
    return [up, -up * p_up / (1 - p_up)], [p_up, 1 - p_up]


# Nulls with Δ = 0 exactly (a wrong FAIL): the issue's, and the audit's right-skewed,
# three-point and partial-credit grid shapes; each (values, probabilities, n).
NULLS = {
    "fixes 10%, costs 1/9 (n=5)": (*two_point(1.0, 0.1), 5),
    "fixes 10%, costs 1/9 (n=11)": (*two_point(1.0, 0.1), 11),
    "fixes 10%, costs 1/9 (n=20)": (*two_point(1.0, 0.1), 20),
    "+1 on 20%, -0.25 (n=50)": (*two_point(1.0, 0.2), 50),
    "right-skewed (n=11)": ([0.9, -0.1], [0.1, 0.9], 11),
    "three-point (n=11)": ([-0.5, 0.0, 1.0], [0.4, 0.4, 0.2], 11),
    "grid of thirds (n=11)": ([-1 / 3, 0.0, 2 / 3], [0.5, 0.25, 0.25], 11),
}
# Δ = −margin (a wrong PASS): most pairs tie, the rest lose a whole point.
AT_MARGIN = {"ties, -1 on 10% (n=60)": ([-1.0, 0.0], [MARGIN, 1 - MARGIN], 60),
             "ties, -1 on 10% (n=200)": ([-1.0, 0.0], [MARGIN, 1 - MARGIN], 200)}  # fmt: skip


def draws(values: list[float], probs: list[float], n: int, runs: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).choice(values, p=probs, size=(runs, n))


def anytime_flags(paths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per run, what ``decide`` (which the fixed gate calls) tells the fixed gate,
    vectorised: NOT WORSE is its decision (the first reached), and the WORSE test has shown
    Δ < 0 (its ``upper`` ≤ 0). ``check_flags`` checks a few against ``decide`` itself."""
    n = paths.shape[-1]
    t_nw, t_w = seq.decision_times(paths, margin=MARGIN, alpha_not_worse=ALPHA,
                                   alpha_worse=ALPHA)  # fmt: skip
    not_worse = (t_nw <= n) & ~((t_w <= n) & (t_w <= t_nw))
    down = seq.log_wealth(paths, 0.0, side="below")
    return not_worse, seq._crossed(down, ALPHA)[..., -1]


def check_flags(paths: np.ndarray, not_worse: np.ndarray, worse: np.ndarray) -> None:
    for d, nw, w in zip(paths, not_worse, worse, strict=False):
        v = seq.decide({"m": d}, margin=MARGIN, alpha=ALPHA, look_ahead=False)["m"]
        if (v.decision is seq.Decision.NOT_WORSE, v.upper <= 0) != (bool(nw), bool(w)):
            raise AssertionError(f"anytime_flags disagrees with decide on {list(d)}")


def fixed_outcomes(paths: np.ndarray, *, backed: bool = True) -> list[str]:
    """The fixed gate's decision on each run of paired differences (one gated metric, so
    its Holm p is its own), on the full suite; ``backed=False``: the FAIL side of the t
    interval alone, as before issue 44."""
    not_worse, worse = anytime_flags(paths)
    check_flags(paths[:20], not_worse, worse)
    outcomes = []
    for d, nw, w in zip(paths, not_worse, worse, strict=True):
        comparison = compare_paired(0.5 + 0 * d, 0.5 + d, margin=MARGIN, alpha=ALPHA)
        decision, _ = fixed_decision(comparison, comparison.p_value, alpha=ALPHA, tier="full",
                                     not_worse=bool(nw), worse=bool(w) or not backed,
                                     lower=float("nan"))  # fmt: skip
        outcomes.append(decision)
    return outcomes


def sequential_outcomes(paths: np.ndarray) -> list[str]:
    """The sequential gate on the same runs, looking after every pair."""
    n = paths.shape[-1]
    t_nw, t_w = seq.decision_times(paths, margin=MARGIN, alpha_not_worse=ALPHA,
                                   alpha_worse=ALPHA)  # fmt: skip
    fail = (t_w <= n) & (t_w <= t_nw)
    return ["fail" if f else "pass" if t <= n else "warn" for f, t in zip(fail, t_nw, strict=True)]


def _cases(n: int) -> list[GoldenCase]:
    return [GoldenCase(id=f"case-{i:03d}", input={},
                       metadata={"category": "c", "difficulty": "easy", "tier": "full"})
            for i in range(n)]  # fmt: skip


def _candidate(k: int, prompt: str) -> RunRecord:
    return RunRecord(f"run-{k}-{prompt}", "s", "p", "v", prompt, "dataset-1", "m", "full")


def _dataset_order(cases: list[GoldenCase], dataset: str) -> list[GoldenCase]:
    """The draw before issue 44: seeded by the dataset's version alone."""
    return sorted(cases, key=lambda c: hashlib.sha256(f"{dataset}:{c.id}".encode()).digest())


def prefix_tuned_passes(tuned: int, runs: int, seed: int = 0, *, per_candidate: bool = True,
                        size: int = 200) -> float:  # fmt: skip
    """How often a candidate fixed on the first ``tuned`` cases the last candidate's gate
    drew, worse by exactly the margin over the suite, passes the sequential gate."""
    cases, rng = _cases(size), np.random.default_rng(seed)
    fail = MARGIN * size / (size - tuned)
    paths = np.zeros((runs, size))
    for k in range(runs):
        if per_candidate:
            seen = draw_order(cases, _candidate(k, "seen"))
            drawn = draw_order(cases, _candidate(k, "fixed"))
        else:
            seen = drawn = _dataset_order(cases, f"dataset-{k}")
        read = {c.id for c in seen[:tuned]}
        worse = rng.random(size) < fail
        paths[k] = [0.0 if c.id in read else -float(w) for c, w in zip(drawn, worse, strict=True)]
    return sequential_outcomes(paths).count("pass") / runs


def reducer_passes(reducer: str, k: int, rate: float, runs: int, seed: int = 0,
                   size: int = 200) -> float:  # fmt: skip
    """How often a candidate whose every answer passes ``MARGIN`` less often (k answers a
    case, independent) passes the sequential gate on the reducer's scale."""
    rng = np.random.default_rng(seed)
    answers = [rng.random((runs, size, k)) < p for p in (rate, rate - MARGIN)]
    reduced = [np.apply_along_axis(lambda a: _reduce(a.astype(float), reducer, 1.0), -1, x)
               for x in answers]  # fmt: skip
    return sequential_outcomes(reduced[1] - reduced[0]).count("pass") / runs


def _rate(share: float, runs: int) -> str:
    return f"{100 * share:.1f}% ± {100 * math.sqrt(max(share * (1 - share), 1e-9) / runs):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    runs = parser.parse_args().runs
    started = time.perf_counter()
    print(f"α = {ALPHA}, margin = {MARGIN}, {runs} runs per row; limit α + 3 SE = "
          f"{100 * (ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)):.1f}%\n")  # fmt: skip
    print("| null | wrong | fixed, t only (before) | fixed, backed (now) | sequential |")
    print("|---|---|---|---|---|")
    for name, (values, probs, n) in {**NULLS, **AT_MARGIN}.items():
        wrong = "FAIL" if name in NULLS else "PASS"
        paths = draws(values, probs, n, runs, seed=n)
        shares = [o.count(wrong.lower()) / runs for o in (
            fixed_outcomes(paths, backed=False), fixed_outcomes(paths),
            sequential_outcomes(paths))]  # fmt: skip
        print(f"| {name} | {wrong} | " + " | ".join(_rate(s, runs) for s in shares) + " |")
    print("\n| fixed on the first K cases drawn (200 cases, worse by the margin) | K | "
          "PASS, draw by dataset (before) | PASS, draw per candidate (now) |")
    print("|---|---|---|---|")
    small = max(200, runs // 4)  # (each run sorts the suite twice)
    for tuned in (20, 40, 60):
        before = prefix_tuned_passes(tuned, small, tuned, per_candidate=False)
        now = prefix_tuned_passes(tuned, small, tuned)
        print(f"| prefix tuning | {tuned} | {_rate(before, small)} | {_rate(now, small)} |")
    print("\n| reducer | k | per-answer pass rate | PASS of a drop of the margin per answer "
          "| the drop on the reducer's scale |")
    print("|---|---|---|---|---|")
    for reducer, k, rate in (("pass_all_k", 3, 0.5), ("pass_all_k", 5, 0.5),
                             ("pass_at_k", 3, 0.7), ("pass_at_k", 5, 0.5),
                             ("max", 3, 0.7), ("max", 5, 0.5)):  # fmt: skip
        share = reducer_passes(reducer, k, rate, small, seed=k)
        drop = per_answer_drop("pass_at_k" if reducer == "max" else reducer, k, rate, MARGIN)
        print(f"| {reducer} | {k} | {rate} | {_rate(share, small)} | {drop:.3f} |")
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
