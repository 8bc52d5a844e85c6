"""What every gate check reads: a candidate run and its baseline, their outputs and scores
per item, the suite's thresholds, and the evidence several checks share (each metric's
values per item, pass/fail flips, the fixed gate's Holm family)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from eval_pipeline.core.scoring.checks.spec import sig
from eval_pipeline.core.scoring.reducers import reduce_items
from eval_pipeline.core.scoring.rows import PairedRow
from eval_pipeline.core.scoring.stats import PairedComparison, compare_paired, holm, mcnemar_exact
from eval_pipeline.core.scoring.thresholds import RegressionConfig, Thresholds
from eval_pipeline.core.store.records import ItemOutput, ItemScore, RunRecord

Passes = tuple[list[bool], list[bool]]  # per item: passed in the baseline, in the candidate


@dataclass(frozen=True)
class FixedFamily:
    """The fixed gate's tests, one Holm family: a paired test per gated metric (McNemar's
    exact test for a BOOLEAN one) and McNemar's per binary metric; their adjusted p."""

    comparisons: dict[str, PairedComparison]
    paired_holm: dict[str, float]
    binary_holm: list[float]  # in the order of ``GateInputs.flips``


@dataclass
class GateInputs:
    baseline: RunRecord
    candidate: RunRecord
    base_out: Sequence[ItemOutput]
    base_scores: Sequence[ItemScore]
    cand_out: Sequence[ItemOutput]
    cand_scores: Sequence[ItemScore]
    thresholds: Thresholds
    categories: Mapping[str, str]
    margin: float
    items: list[str]  # the candidate's, sorted
    order: Sequence[str] | None  # sequential gate: the items in the order drawn; None: fixed
    unchanged: bool  # the baseline's agent again, with its outputs and scores (UNCHANGED)
    suite_size: int | None = None  # sequential: the cases it could draw in all
    # say what an undecided metric learned (paired_gate ``learned``): costly, so a
    # sequential run asks only for the verdict it reports (``GateReport.explained``)
    explain: bool = True

    @property
    def config(self) -> RegressionConfig:
        return self.thresholds.regression

    @property
    def alpha(self) -> float:
        return self.config.alpha

    @cached_property
    def _reduced(self) -> dict[tuple[str, str], dict[str, float]]:
        return {}

    def values(self, side: Literal["base", "cand"], metric: str) -> dict[str, float]:
        """The metric per item in the baseline's or the candidate's scores, its repeats
        reduced as the suite says (once per metric: every check reads them)."""
        key = (side, metric)
        if key not in self._reduced:
            scores = self.base_scores if side == "base" else self.cand_scores
            self._reduced[key] = reduce_items(scores, metric, self.config.reducer,
                                              self.config.pass_threshold)  # fmt: skip
        return self._reduced[key]

    def paired(self, metric: str, items: Sequence[str] | None = None
               ) -> tuple[list[float], list[float]]:  # fmt: skip
        """(baseline, candidate) values of ``metric`` on ``items`` (default: all), in their
        order, for the items both runs have a value for: a missing score is never a 0 (an
        agent's own error is scored 0 where it happens; a score an evaluator could not give
        is missing). ``missing`` counts the items left out."""
        _, b, c = self.pairs(metric, items)
        return b, c

    def pairs(self, metric: str, items: Sequence[str] | None = None
              ) -> tuple[list[str], list[float], list[float]]:  # fmt: skip
        """``paired``, with the items the pairs belong to."""
        base, cand = self.values("base", metric), self.values("cand", metric)
        both = [i for i in (self.items if items is None else items) if i in base and i in cand]
        return both, [base[i] for i in both], [cand[i] for i in both]

    def missing(self, metric: str, items: Sequence[str] | None = None) -> list[str]:
        """The items of ``items`` (default: all) without a value of ``metric`` in one run or
        the other (its evaluator could not score them), which ``paired`` leaves out."""
        base, cand = self.values("base", metric), self.values("cand", metric)
        return [i for i in (self.items if items is None else items)
                if i not in base or i not in cand]  # fmt: skip

    @property
    def sequential_metrics(self) -> list[str]:
        """What the sequential gate decides on: the gated metrics and the pass/fail ones
        (their pass rates, non-inferiority like the others; WORSE family-wise over all)."""
        return list(dict.fromkeys([*self.thresholds.gated_metrics,
                                   *self.thresholds.binary_metrics]))  # fmt: skip

    def passes(self, metric: str) -> Passes:
        """Per item, whether ``metric`` passed (≥ pass_threshold) in each run."""
        b, c = self.paired(metric)
        at = self.config.pass_threshold
        return [v >= at for v in b], [v >= at for v in c]

    @cached_property
    def flips(self) -> dict[str, Passes]:
        """The binary metrics' pass/fail per item (what McNemar's test counts)."""
        return {m: self.passes(m) for m in self.thresholds.binary_metrics}

    @cached_property
    def fixed_family(self) -> FixedFamily:
        """The fixed gate's tests and their Holm-adjusted p: per gated metric the paired
        difference's t-test, or for a BOOLEAN metric the exact McNemar test on the items
        that flipped (McNemar 1947; stats.mcnemar_exact), with the binary metrics' McNemar
        tests in one family (an untested comparison enters with p = 1: it can only make
        the others stricter)."""
        comparisons = {}
        for m in self.thresholds.gated_metrics:
            comparison = compare_paired(*self.paired(m), margin=self.margin, alpha=self.alpha)
            if comparison.tested and declared_boolean(self.cand_scores, m):
                exact = mcnemar_exact(*self.passes(m))
                comparison = dataclasses.replace(comparison, p_value=exact)
            comparisons[m] = comparison
        family = [c.p_value for c in comparisons.values()]
        family += [mcnemar_exact(*f) for f in self.flips.values()]
        adjusted = holm(family)
        return FixedFamily(comparisons, dict(zip(comparisons, adjusted, strict=False)),
                           adjusted[len(comparisons):])  # fmt: skip


def declared_boolean(scores: Sequence[ItemScore], metric: str) -> bool:
    """The metric's scores are pass/fail by declaration: BOOLEAN (0 or 1), or CATEGORICAL
    valued by a pass set or an order of two (core/scoring/categories.py: 0 or 1 too)."""
    given = [s for s in scores if s.evaluator == metric and s.value is not None]
    return bool(given) and all(
        s.data_type == "BOOLEAN" or (s.data_type == "CATEGORICAL" and s.value in (0.0, 1.0))
        for s in given
    )


def comparison_row(metric: str, comparison: PairedComparison, **extra: Any) -> PairedRow:
    """A fixed-n paired comparison as a row (its CI and p only when it was tested), its
    numbers exact: rounded once, where they are shown (−0.50851 rounded to 4 places, then
    shown to 3, read −0.508)."""
    tested = comparison.tested
    return PairedRow(
        metric=metric,
        n=comparison.n,
        delta=comparison.delta,
        ci_low=comparison.ci_low if tested else None,
        ci_high=comparison.ci_high if tested else None,
        p_value=sig(comparison.p_value) if tested else None,
        mde=comparison.mde if tested else None,
        decision=comparison.decision,
        cases_needed=comparison.cases_needed,
        note=comparison.note,
        **extra,
    )
