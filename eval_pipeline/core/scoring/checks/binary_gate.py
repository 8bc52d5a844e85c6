"""binary_gate (the fixed gate): McNemar's exact test per pass/fail metric: fails when
significantly more items newly fail than newly pass (Holm-adjusted); more newly failing
but not significantly is UNDECIDED, never a pass. The sequential gate decides pass/fail
metrics in paired_gate instead, anytime-valid."""

from __future__ import annotations

from eval_pipeline.core.scoring.checks.gate_inputs import GateInputs
from eval_pipeline.core.scoring.checks.spec import CheckSpec, GateCheck, register, sig, worst
from eval_pipeline.core.scoring.rows import BinaryRow, Outcome
from eval_pipeline.core.scoring.stats import mcnemar_exact, wilson_interval


def binary_gate(inputs: GateInputs) -> GateCheck:
    """Exact McNemar per binary metric; the fixed gate adjusts its p-values in one Holm
    family with the paired tests, the sequential gate among the binary metrics, each at its
    share of α."""
    flips = inputs.flips
    if not flips:
        return GateCheck("binary_gate", "pass", "not tested: no pass/fail metrics are "
                         "configured (regression.binary_metrics or all_items_pass)",
                         tested=False)  # fmt: skip
    if inputs.order is not None:  # McNemar looked at after every batch would not be valid
        return GateCheck("binary_gate", "pass", "not tested: the sequential gate decides the "
                         f"pass/fail metrics ({', '.join(flips)}) with the others, "
                         "anytime-valid (paired_gate)", tested=False)  # fmt: skip
    p_holm, alpha = inputs.fixed_family.binary_holm, inputs.alpha
    rows, outcomes = [], []
    n = len(inputs.items)
    for (metric, (old, new)), adjusted in zip(flips.items(), p_holm, strict=True):
        b = sum(o and not n for o, n in zip(old, new, strict=True))
        c = sum(n and not o for o, n in zip(old, new, strict=True))
        outcome: Outcome = "fail" if adjusted < alpha else "warn" if b > c else "pass"
        outcomes.append(outcome)
        low, high = wilson_interval(sum(new), len(new))
        rows.append(
            BinaryRow(
                metric=metric,
                n=n,
                newly_failing=b,
                newly_passing=c,
                baseline_rate=round(sum(old) / len(old), 4) if old else None,
                candidate_rate=round(sum(new) / len(new), 4) if new else None,
                candidate_wilson_95=f"[{low:.3f}, {high:.3f}]",
                p_value=sig(mcnemar_exact(old, new)),
                p_holm=sig(adjusted),
                outcome=outcome,
            )
        )
    text = "; ".join(
        f"{r.metric}: {r.newly_failing} newly failing, "
        f"{r.newly_passing} newly passing (p={r.p_holm:.3g})"
        for r in rows
    )
    return GateCheck("binary_gate", worst(outcomes), text, rows)


register(CheckSpec(
    "binary_gate", "gate", blocking=True, run=binary_gate, undecided_on_warn=True,
    description="Blocks. Fixed gate: exact McNemar test on pass/fail metrics: fails when "
    "significantly more items newly fail than newly pass (Holm-adjusted); more newly "
    "failing but not significantly is UNDECIDED. The sequential gate decides pass/fail "
    "metrics in paired_gate, with the others.",
))  # fmt: skip
