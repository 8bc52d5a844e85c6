"""``python -m eval_pipeline.evaluators``: the built-in evaluators' reference table, as
docs/evaluators.md shows it (a test keeps the two in step)."""

from eval_pipeline.evaluators.registry import reference

print(reference(), end="")
