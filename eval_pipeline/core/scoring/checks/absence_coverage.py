"""absence_coverage: at least 25% of the suite's cases expect the agent to do nothing, and
every absence category the suite declares has cases (checked on the suite's cases, not
the tier's: it is a property of the dataset; Dagster's golden_dataset asset shows it too,
decided here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eval_pipeline.core.scoring.checks.spec import (
    CheckOutcome,
    CheckSpec,
    ThresholdInputs,
    not_tested,
    register,
)
from eval_pipeline.core.suites.cases import CaseSet, GoldenCase

MIN_SHARE = 0.25  # of the cases that expect the agent to do nothing
DESCRIPTION = ("Blocks. At least 25% of the cases expect the agent to do nothing, and "
               "every absence category of the suite has cases (absence_categories); "
               "not tested for a suite that declares none.")  # fmt: skip


@dataclass(frozen=True)
class Coverage:
    """How many of the suite's cases expect nothing, and the absence categories without any."""

    share: float
    missing: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.missing and self.share >= MIN_SHARE

    def line(self) -> str:
        found = f"{self.share:.0%} of the cases expect nothing"
        if self.missing:
            found += f"; no cases in {', '.join(self.missing)}"
        return f"{found} (at least {MIN_SHARE:.0%})"


def coverage(cases: Sequence[GoldenCase], absence_categories: Sequence[str]) -> Coverage | None:
    """The suite's absence coverage; None for a suite that declares no absence categories."""
    if not absence_categories:
        return None
    categories = CaseSet.of(cases).categories  # (no case made: a suite may be large)
    absent, present = [c for c in categories if c in absence_categories], set(categories)
    missing = tuple(a for a in absence_categories if a not in present)
    return Coverage(len(absent) / len(categories) if categories else 0.0, missing)


NOT_DECLARED = ("the suite declares no absence_categories (cases that expect the agent to "
                "do nothing)")  # fmt: skip


def check_absence_coverage(inputs: ThresholdInputs) -> CheckOutcome:
    found = coverage(inputs.suite_cases, inputs.absence_categories)
    if found is None:
        return not_tested(NOT_DECLARED)
    return CheckOutcome(found.passed, found.line())


register(CheckSpec("absence_coverage", "threshold", blocking=True, run=check_absence_coverage,
                   description=DESCRIPTION, of_dataset=True))  # fmt: skip
