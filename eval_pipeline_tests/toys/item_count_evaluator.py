"""A toy evaluator, whole in one file: a project file that lists this module under
``plugins`` may name it (test_registry.py)."""

from eval_pipeline.plugins import Score, evaluator, register


@register
@evaluator(reads=("expected_output.expected_items",))
def item_count_matches(*, output, expected_output=None, **kwargs) -> Score:
    """1.0 when the order holds as many lines as the expected order."""
    got = len(((output or {}).get("current_order") or {}).get("items") or [])
    want = len((expected_output or {}).get("expected_items") or [])
    return Score(float(got == want), f"{got} line(s), expected {want}")
