"""The example cases ``eval-pipeline init`` writes (cli/init.py), known here so that a run
on them is never a suite's baseline (core/evaluation/baseline.py ``unfit``): they are
there to be replaced, and a baseline on them makes every later run on the real cases
"not comparable"."""

from __future__ import annotations

from collections.abc import Iterable

from eval_pipeline.core.suites.cases import GoldenCase

# (the end of the case's id, after "<suite>-", and its message), as init writes them
EXAMPLES = (
    ("example-01", "A request that needs one of your tools"),
    ("example-02", "Another request, phrased the way your users phrase it"),
    ("example-03", "Hello!"),
)


def placeholder_cases(cases: Iterable[GoldenCase]) -> list[str]:
    """The ids of ``cases`` that are init's examples as it wrote them (id and message)."""
    return [case.id for case in cases
            if any(case.id.endswith(f"-{end}") and case.input == {"message": message}
                   for end, message in EXAMPLES)]  # fmt: skip
