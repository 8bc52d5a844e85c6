"""Agreement between a judge and people on pass/fail labels.

Cohen's kappa = (p_o − p_e) / (1 − p_e): p_o the share of items where both say the same,
p_e the share expected by chance from each side's pass rate. Its 95% CI uses Cohen's
(1960) large-sample standard error, se = √(p_o (1 − p_o) / (n (1 − p_e)²)), kappa ± 1.96 se,
clipped to [−1, 1]: simple enough to check by hand, and wide on a small set, as it should
be.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.96


@dataclass(frozen=True)
class Agreement:
    n: int
    both_pass: int
    both_fail: int
    judge_only_pass: int  # the judge passed what people failed
    human_only_pass: int  # people passed what the judge failed
    accuracy: float  # p_o
    kappa: float | None  # None when chance agreement is 1 (everyone said the same)
    kappa_low: float | None
    kappa_high: float | None

    def line(self) -> str:
        kappa = "undefined (one label only)" if self.kappa is None else (
            f"{self.kappa:.3f} [95% CI {self.kappa_low:.3f}, {self.kappa_high:.3f}]"
        )  # fmt: skip
        return f"n={self.n}, accuracy {self.accuracy:.3f}, Cohen's kappa {kappa}"


def cohen_kappa(pairs: Sequence[tuple[bool, bool]]) -> Agreement:
    """``pairs``: (judge passes, people pass) per item."""
    n = len(pairs)
    if n == 0:
        raise ValueError("no labelled items to compare")
    both_pass = sum(j and h for j, h in pairs)
    both_fail = sum(not j and not h for j, h in pairs)
    judge_only = sum(j and not h for j, h in pairs)
    human_only = sum(h and not j for j, h in pairs)
    p_o = (both_pass + both_fail) / n
    judge_rate = (both_pass + judge_only) / n
    human_rate = (both_pass + human_only) / n
    p_e = judge_rate * human_rate + (1 - judge_rate) * (1 - human_rate)
    if p_e >= 1.0:
        return Agreement(n, both_pass, both_fail, judge_only, human_only, p_o, None, None, None)
    kappa = (p_o - p_e) / (1 - p_e)
    se = math.sqrt(p_o * (1 - p_o) / (n * (1 - p_e) ** 2))
    low, high = max(-1.0, kappa - Z95 * se), min(1.0, kappa + Z95 * se)
    return Agreement(n, both_pass, both_fail, judge_only, human_only, round(p_o, 6),
                     round(kappa, 6), round(low, 6), round(high, 6))  # fmt: skip
