"""Every check of a run, declared once each in a module of its own (base.py says what a
check is). Importing this package registers the built-in ones, in the order reports list
them; a project's own register from its plugin modules (``eval_pipeline.plugins``)."""

from collections.abc import Sequence

# The order they register in is the order reports list them.
# isort: off
from eval_pipeline.core.scoring.checks import (  # noqa: F401  (each registers itself)
    items_measured,
    min_mean_scores,
    all_items_pass,
    category_floors,
    primary_floor,
    absence_coverage,
    paired_gate,
    binary_gate,
    category_deltas,
    cost_latency,
)

# isort: on
from eval_pipeline.core.scoring.checks.gate_inputs import GateInputs
from eval_pipeline.core.scoring.checks.spec import (
    REGISTRY,
    CheckOutcome,
    CheckSpec,
    GateCheck,
    Label,
    ThresholdCheck,
    ThresholdInputs,
    checks,
    not_tested,
    register,
    spec,
)
from eval_pipeline.core.scoring.summary import Summary
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.records import ItemScore
from eval_pipeline.core.suites.cases import GoldenCase

__all__ = [
    "REGISTRY",
    "CheckOutcome",
    "CheckSpec",
    "GateCheck",
    "GateInputs",
    "Label",
    "ThresholdCheck",
    "ThresholdInputs",
    "checks",
    "not_tested",
    "register",
    "run_thresholds",
    "spec",
]


def run_thresholds(
    summary: Summary, scores: Sequence[ItemScore], thresholds: Thresholds, *,
    min_primary: float | None = None, suite_cases: Sequence[GoldenCase] = (),
    absence_categories: Sequence[str] = (),
) -> list[ThresholdCheck]:  # fmt: skip
    """Every registered threshold check of a run (those asked for: a check returning None
    was not, e.g. ``threshold`` without ``--threshold``)."""
    inputs = ThresholdInputs(summary, scores, thresholds, min_primary, suite_cases,
                             absence_categories)  # fmt: skip
    found = [(s, s.run(inputs)) for s in checks("threshold") if s.run is not None]
    return [ThresholdCheck(s.name, outcome, s.blocking) for s, outcome in found
            if outcome is not None]  # fmt: skip
