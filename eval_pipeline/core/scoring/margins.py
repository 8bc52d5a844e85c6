"""Which margin a suite of n cases can gate on: the rule `init`, `doctor`, the examples'
thresholds and docs/gate.md ("Choosing a margin") share.

The sequential gate calls a candidate NOT WORSE once its paired differences rule out a
drop of the margin. Even when nothing moved (every pair tied), that takes
``pairs_to_clear(margin, α)`` pairs: n cases decide no margin finer than
``finest_margin(n, α)`` (core/scoring/sequential.py). A real agent is rarely tied on every
case: a few cases flip, and one flip costs the gate much of what the tied pairs had won
(the near all-in bet of its mixture loses 99% of its stake on it). So the advised margin
is one that **half** the suite decides when nothing moved: ``finest_margin(n // 2, α)``.
Then the whole suite still says NOT WORSE when one case got worse by a full point (a
pass/fail flip) and another got better, in any order (the test martingale's value after
all n pairs does not depend on their order; from 7 cases on). A suite whose margin is
finer ends UNDECIDED on a copy of its own production prompt unless that copy is tied on
nearly every case.
"""

from __future__ import annotations

import math

from eval_pipeline.core.scoring.sequential import finest_margin, pairs_to_clear

HEADROOM = 2  # the suite's cases per tied pair the advised margin needs
SIZES = (16, 22, 32, 47, 68, 100, 200, 348)  # the rows of docs/gate.md's table


def advised_margin(cases: int, alpha: float) -> float:
    """The finest margin ``cases`` cases gate with room for a few flips: the finest that
    half of them could decide with nothing moved (module docstring); 1.0 below 2 cases."""
    return finest_margin(cases // HEADROOM, alpha)


def cases_for_margin(margin: float, alpha: float) -> int | None:
    """The fewest cases whose advised margin is at most ``margin`` (None: over 8,000)."""
    tied = pairs_to_clear(margin, alpha)
    return None if tied is None else HEADROOM * tied


def shown(margin: float) -> str:
    """A margin as a thresholds file would hold it: rounded *up* to 0.01."""
    return f"{math.ceil(round(margin * 100, 6)) / 100:.2f}"


def table(alpha: float, sizes: tuple[int, ...] = SIZES) -> list[tuple[int, str, str]]:
    """(cases, finest margin, advised margin) per suite size, as printed."""
    return [(n, f"{finest_margin(n, alpha):.3f}", shown(advised_margin(n, alpha)))
            for n in sizes]  # fmt: skip
