"""What a check is, and the registry every check is declared in.

A check is declared once, in a module of its own, with ``register(CheckSpec(...))``: its
name, whether its failure blocks the run, the description people read (the Dagster check,
the docs) and how it runs. The gate and the thresholds loop over the registry; the
Dagster checks, bisect and the exports read a check's ``blocking`` flag and description
from it. A project adds one the same way from a plugin module (``eval_pipeline.plugins``).

Three kinds:

- ``run``: about the run itself (``items_measured``: did it measure the agent at all);
- ``threshold``: the run's own numbers (and its suite's cases) against the suite's
  thresholds file and the run's options; ``run`` gets a ``ThresholdInputs`` and returns a
  ``CheckOutcome``, or None when nothing asked for it in this run (``--threshold`` unset:
  the run's reports do not list it);
- ``gate``: the run against its baseline, item by item; ``run`` gets a ``GateInputs``
  (gate_inputs.py) and returns a ``GateCheck``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from eval_pipeline.core.scoring.rows import CheckRow, Outcome, WorseItem
from eval_pipeline.core.scoring.summary import Summary
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.store.records import ItemScore
from eval_pipeline.core.suites.cases import GoldenCase

CheckKind = Literal["run", "threshold", "gate"]


@dataclass(frozen=True)
class CheckSpec:
    """One check: declared once, read by every place that runs or shows it."""

    name: str
    kind: CheckKind
    blocking: bool  # its failure fails the run (else it warns)
    description: str  # what it tests and whether it blocks, for people
    run: Callable[[Any], Any] | None = None  # see the module docstring; None: kind "run"
    undecided_on_warn: bool = False  # its WARN means "the gate could not tell" (UNDECIDED)
    # a gate check whose result can say more once it is the one reported (GateInputs.explain)
    explain: Callable[[Any, Any], Any] | None = None
    of_dataset: bool = False  # it checks the suite's cases, not the agent: a PASS gates nothing


REGISTRY: dict[str, CheckSpec] = {}


def register(spec: CheckSpec) -> CheckSpec:
    """Declare a check (a second one of the same name is a mistake, refused)."""
    known = REGISTRY.get(spec.name)
    if known is not None and known != spec:
        raise ValueError(f"a check named {spec.name!r} is registered already")
    if spec.kind != "run" and spec.run is None:
        raise ValueError(f"the {spec.kind} check {spec.name!r} has nothing to run (run=None)")
    REGISTRY[spec.name] = spec
    return spec


def checks(kind: CheckKind | None = None) -> list[CheckSpec]:
    """The registered checks (of one ``kind``), in the order they were declared."""
    return [s for s in REGISTRY.values() if kind is None or s.kind == kind]


def spec(name: str) -> CheckSpec | None:
    return REGISTRY.get(name)


@dataclass
class GateCheck:
    """A gate check's result: its outcome, what it found, and the rows behind it."""

    name: str
    outcome: Outcome
    description: str
    rows: Sequence[CheckRow] = field(default_factory=list)  # one per metric / category
    worse_items: list[WorseItem] = field(default_factory=list)
    tested: bool = True  # False: nothing was configured for it to test (not a pass)
    errors: list[str] = field(default_factory=list)  # why it cannot decide: the verdict is ERROR

    @property
    def blocking(self) -> bool:
        """Its failure fails the run, as its check declares (a check not registered: yes)."""
        declared = spec(self.name)
        return declared is None or declared.blocking

    @property
    def blocking_failure(self) -> bool:
        return self.outcome == "fail" and self.blocking

    @property
    def undecided(self) -> bool:
        """The check could not tell whether a gated metric got worse by more than the
        margin (too few items, or too much noise): the run is UNDECIDED, never a pass."""
        declared = spec(self.name)
        return self.outcome == "warn" and declared is not None and declared.undecided_on_warn

    @property
    def label(self) -> str:
        """PASS / WARN / FAIL / UNDECIDED, or N/A for a check that tested nothing."""
        if not self.tested:
            return "N/A"
        return "UNDECIDED" if self.undecided else self.outcome.upper()


def worst(outcomes: Sequence[Outcome]) -> Outcome:
    return "fail" if "fail" in outcomes else "warn" if "warn" in outcomes else "pass"


def sig(p: float) -> float:
    """A p-value kept to 3 significant digits (rounding to decimals would turn 1e-9 into 0)."""
    return float(f"{p:.3g}")


@dataclass
class CheckOutcome:
    passed: bool
    description: str
    rows: Sequence[CheckRow] = field(default_factory=list)
    tested: bool = True  # False: the thresholds configure nothing for it (not a pass)

    def label(self, blocking: bool) -> Label:
        """PASS, FAIL (blocking) or WARN, or N/A for a check that tested nothing."""
        if not self.tested:
            return "N/A"
        return "PASS" if self.passed else "FAIL" if blocking else "WARN"


Label = Literal["PASS", "FAIL", "WARN", "UNDECIDED", "N/A"]


@dataclass
class ThresholdCheck:
    """One threshold check of a run: its name, what it found, whether it blocks."""

    name: str
    outcome: CheckOutcome
    blocking: bool

    @property
    def label(self) -> Label:
        return self.outcome.label(self.blocking)


def not_tested(why: str) -> CheckOutcome:
    return CheckOutcome(True, f"not tested: {why}", tested=False)


@dataclass(frozen=True)
class ThresholdInputs:
    """What a threshold check reads: the run's summary and scores, the suite's thresholds,
    the run's ``--threshold`` (``min_primary``), the suite's cases and which of its
    categories expect the agent to do nothing."""

    summary: Summary
    scores: Sequence[ItemScore]
    thresholds: Thresholds
    min_primary: float | None = None
    suite_cases: Sequence[GoldenCase] = ()
    absence_categories: Sequence[str] = ()
