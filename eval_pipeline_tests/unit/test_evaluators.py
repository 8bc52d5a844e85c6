"""Every rule of the drive-thru evaluators (seed 000 as specified in issue 2)."""

import pytest
from eval_examples.drive_thru.evaluators import (
    avg_order_correctness,
    no_hallucinated_items,
    order_correctness,
    tool_call_accuracy,
)
from langfuse import Evaluation


def line(item_id, quantity=1, size=None, modifiers=()):
    out = {"item_id": item_id, "name": item_id.title(), "quantity": quantity,
           "modifiers": [{"modifier_id": m, "name": m} for m in modifiers]}  # fmt: skip
    if size:
        out["size"] = size
    return out


def oc(expected, actual):
    return order_correctness(
        output={"current_order": {"items": actual}}, expected_output={"expected_items": expected}
    )


def test_both_empty_is_correct():
    assert oc([], []).value == 1.0


def test_items_when_none_expected_is_zero_and_named():
    result = oc([], [line("big-mac")])
    assert result.value == 0.0
    assert "Big-Mac" in result.comment


def test_nothing_added_when_items_expected_is_zero():
    assert oc([line("hash-brown")], []).value == 0.0


def test_exact_match_is_one_regardless_of_order():
    expected = [line("a", 2), line("b")]
    assert oc(expected, list(reversed(expected))).value == 1.0


def test_quantity_ratio_weight():
    # 0.4 + 0.3 * 2/3 + 0.2 + 0.1
    assert oc([line("a", 2)], [line("a", 3)]).value == pytest.approx(0.9)


def test_modifier_jaccard_weight_and_comment():
    result = oc([line("a", modifiers=["egg", "cheese"])], [line("a", modifiers=["egg"])])
    assert result.value == pytest.approx(0.4 + 0.3 + 0.2 * 0.5 + 0.1)
    assert "missing modifiers ['cheese']" in result.comment


def test_missing_size_counts_as_regular():
    assert oc([line("coffee")], [line("coffee", size="regular")]).value == 1.0
    assert oc([line("coffee", size="large")], [line("coffee")]).value == pytest.approx(0.9)


def test_missed_and_extra_items_count_zero_in_the_denominator():
    # expected {a, b}, actual {a, c}: a scores 1, b and c 0 → 1/3
    result = oc([line("a"), line("b")], [line("a"), line("c")])
    assert result.value == pytest.approx(1 / 3)
    assert "missing item" in result.comment and "extra item" in result.comment


def test_lines_with_the_same_id_are_merged():
    expected = [line("a", 2, modifiers=["egg"])]
    actual = [line("a", 1, modifiers=["egg"]), line("a", 1)]
    assert oc(expected, actual).value == 1.0


def tca(calls, expected_items):
    return tool_call_accuracy(
        output={"tools_called": calls}, expected_output={"expected_items": expected_items}
    ).value


@pytest.mark.parametrize(
    ("calls", "value"),
    [
        (["lookup_menu_item", "add_item_to_order"], 1.0),
        (["add_item_to_order", "lookup_menu_item"], 0.5),
        (["lookup_menu_item"], 0.3),
        (["add_item_to_order"], 0.3),
        ([], 0.0),
        (["get_current_order"], 0.0),
    ],
)
def test_tool_call_accuracy_when_items_expected(calls, value):
    assert tca(calls, [line("a")]) == value


def test_tool_call_accuracy_when_nothing_expected():
    assert tca(["lookup_menu_item"], []) == 1.0
    assert tca([], []) == 1.0
    assert tca(["lookup_menu_item", "add_item_to_order"], []) == 0.0


def test_no_hallucinated_items():
    evaluator = no_hallucinated_items({"a", "b"})
    assert evaluator(output={"current_order": {"items": []}}).value == 1.0
    assert evaluator(output={"current_order": {"items": [line("a"), line("b")]}}).value == 1.0
    bad = evaluator(output={"current_order": {"items": [line("a"), line("zz")]}})
    assert bad.value == 0.0 and "zz" in bad.comment


class _Result:
    def __init__(self, *evaluations):
        self.evaluations = list(evaluations)


def test_avg_order_correctness_skips_none_and_rounds():
    results = [
        _Result(Evaluation(name="order_correctness", value=1.0)),
        _Result(Evaluation(name="order_correctness", value=0.5)),
        _Result(Evaluation(name="order_correctness", value=0.3333)),
        _Result(Evaluation(name="order_correctness", value=None)),
        _Result(Evaluation(name="tool_call_accuracy", value=0.0)),
    ]
    assert avg_order_correctness(item_results=results).value == 0.611


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_score_that_is_not_finite_is_an_evaluator_error_where_it_is_made(bad):
    """NaN cannot be averaged, and JSON (so Langfuse) has no NaN: refused at the source."""
    from eval_pipeline.core.scoring.apply import evaluate_one, item_results, run_level
    from eval_pipeline.evaluators.declare import Score, evaluator, run_evaluator

    @evaluator
    def odd(*, output, **_):
        return Score(bad, metadata={"ratio": bad})

    (score,) = evaluate_one(odd, item_id="c1", repeat=0, input={}, output={},
                            expected_output={}, metadata={})  # fmt: skip
    assert score.value is None and "not a finite number" in score.comment

    @run_evaluator
    def mean_of_nothing(*, item_results):
        return Evaluation(name="mean_of_nothing", value=bad)

    (found,) = run_level([mean_of_nothing], item_results([], [])).values()
    assert found.value is None and "not a finite number" in found.comment


def test_a_value_that_is_not_a_number_is_an_error_naming_it():
    """A team's Langfuse evaluator returning a category was stored as None with no error,
    and the gate read that as 0. A category is now kept as a category (valued by the
    suite's scale: test_categories.py); a value that is neither a number nor a category is
    an error of the evaluator, naming the value."""
    from langfuse import Evaluation

    from eval_pipeline.core.scoring.evaluations import UNSUPPORTED, item_scores

    (tone,) = item_scores("c1", 0, [Evaluation(name="tone", value="friendly",
                                               data_type="CATEGORICAL")])  # fmt: skip
    assert (tone.category, tone.data_type, tone.value) == ("friendly", "CATEGORICAL", None)
    (score,) = item_scores("c1", 0, [Evaluation(name="tone", value=["a", "b"])])
    assert score.value is None and score.error_kind == UNSUPPORTED
    assert "tone returned ['a', 'b']" in score.comment
    (flag,) = item_scores("c1", 0, [Evaluation(name="ok", value=True, data_type="BOOLEAN")])
    assert (flag.value, flag.data_type) == (1.0, "BOOLEAN")
