"""Seed 001's behavioural evaluators and the agentevals-compatible trajectory match."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from agentevals.trajectory.match import create_trajectory_match_evaluator

from eval_pipeline.evaluators import (
    behavioural_overall,
    completeness,
    correctness,
    groundedness,
    trajectory_match,
)
from eval_pipeline.evaluators.behavioural import completeness_value, overall_with

FACTUAL = {"criteria": {"tool_called": True, "grounded": True}}


def out(tools=(), response=""):
    return {"tools_called": list(tools), "response": response}


def test_groundedness_is_binary_with_criteria_defaults():
    assert groundedness(output=out(), metadata=FACTUAL).value == 0.0
    assert groundedness(output=out(["search_products"]), metadata=FACTUAL).value == 1.0
    assert groundedness(output=out(), metadata={}).value == 0.0  # both default to true
    chit_chat = {"criteria": {"grounded": False}}
    assert groundedness(output=out(), metadata=chit_chat).value == 1.0
    assert groundedness(output=out(), metadata={"criteria": {"tool_called": False}}).value == 1.0


def test_correctness_is_the_share_of_expected_tools_and_ignores_extras():
    expected = {"expected_tools": ["search_products", "get_reviews"]}
    assert correctness(output=out(["search_products"]), expected_output=expected).value == 0.5
    both = out(["get_reviews", "check_inventory", "search_products"])
    assert correctness(output=both, expected_output=expected).value == 1.0
    assert correctness(output=out(), expected_output={"expected_tools": []}).value == 1.0
    assert (
        "missing ['get_reviews']"
        in correctness(output=out(["search_products"]), expected_output=expected).comment
    )


@pytest.mark.parametrize(
    ("text", "field", "found"),
    [
        ("It costs $348.", "price", True),
        ("Our profit margin is thin", "price", False),  # no substring matches
        ("What a surprise", "price", False),
        ("The appraisal is done", "price", False),
        ("Priced at 12", "price", False),  # "price" followed by a letter
        ("PRICE: 12", "price", True),  # case-insensitive
        ("USD$199", "price", True),  # "USD" matches; "$" after a letter would not
        ("a$b", "price", False),
        ("4.5 stars", "rating", True),
        ("superstars only", "rating", False),
        ("order state: shipped", "status", True),
        ("statuses", "status", False),
        ("shipment 1Z999", "tracking_number", True),
        ("warranty: 2 years", "warranty", True),  # no aliases: the field name itself
    ],
)
def test_completeness_alias_boundaries(text, field, found):
    from eval_pipeline.evaluators.behavioural import FIELD_ALIASES

    value, hits, missing = completeness_value(text, [field], FIELD_ALIASES)
    assert (
        (value == 1.0) is found
        and (hits == [field]) is found
        and (missing == [field]) is (not found)
    )


def test_completeness_partial_and_overall_weights():
    expected = {"expected_tools": ["search_products"], "expected_fields": ["name", "price"]}
    response = out(["search_products"], "The Trail Runner 2 costs $89.")
    assert completeness(output=response, expected_output=expected).value == 0.5
    overall = behavioural_overall(output=response, expected_output=expected, metadata=FACTUAL)
    assert overall.name == "overall" and overall.value == pytest.approx(0.4 + 0.4 + 0.1)
    assert overall.metadata["passed"] is True
    ungrounded = behavioural_overall(
        output=out([], "It is $89, name Trail"), expected_output=expected, metadata=FACTUAL
    )
    assert ungrounded.value == pytest.approx(0.2) and ungrounded.metadata["passed"] is False
    custom = overall_with({"price": ["€"]})(
        output=out(["search_products"], "name: x, 10 €"), expected_output=expected, metadata=FACTUAL
    )
    assert custom.value == pytest.approx(1.0)


# --- trajectory match ---------------------------------------------------------------------


def call(name, **args):
    return {
        "id": f"c-{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def ai(*calls, content=""):
    return {"role": "assistant", "content": content, "tool_calls": list(calls) or None}


REFERENCE = [
    {"role": "user", "content": "Compare the population of Oslo and Bergen"},
    ai(call("search", query="Oslo population"), call("search", query="Bergen population")),
    {"role": "tool", "content": "Oslo: 709,000", "tool_call_id": "c-search"},
    {"role": "tool", "content": "Bergen: 291,000", "tool_call_id": "c-search"},
    ai(content="Oslo has about 2.4 times the population of Bergen."),
]


def test_parallel_calls_in_one_step_may_come_in_any_order():
    swapped = [dict(m) for m in REFERENCE]
    swapped[1] = ai(
        call("search", query="Bergen population"), call("search", query="Oslo population")
    )
    result = trajectory_match(mode="strict")(
        output={"messages": swapped}, expected_output={"trajectory": REFERENCE}
    )
    assert result.value == 1.0 and result.name == "trajectory_strict_match"


def test_comments_say_what_broke():
    missing = [*REFERENCE[:1], ai(call("search", query="Oslo population")), *REFERENCE[2:]]
    strict = trajectory_match(mode="strict")(output=missing, expected_output=REFERENCE)
    assert strict.value == 0.0 and "message 1" in strict.comment
    superset = trajectory_match(mode="superset")(output=missing, expected_output=REFERENCE)
    assert superset.value == 0.0 and "Bergen population" in superset.comment
    extra = [*REFERENCE[:4], ai(call("calculator", expr="709/291")), REFERENCE[4]]
    subset = trajectory_match(mode="subset")(output=extra, expected_output=REFERENCE)
    assert subset.value == 0.0 and "extra call calculator" in subset.comment
    assert trajectory_match(mode="superset")(output=extra, expected_output=REFERENCE).value == 1.0


def test_args_modes_and_overrides():
    loose = [
        REFERENCE[0],
        ai(
            call("search", query="Oslo population", top_k=3),
            call("search", query="Bergen population"),
        ),
        *REFERENCE[2:],
    ]
    check = lambda **kw: trajectory_match(**kw)(output=loose, expected_output=REFERENCE).value  # noqa: E731
    assert check(mode="strict", tool_args_match_mode="exact") == 0.0
    assert check(mode="strict", tool_args_match_mode="superset") == 1.0
    assert check(mode="strict", tool_args_match_mode="subset") == 0.0
    assert check(mode="strict", tool_args_match_mode="ignore") == 1.0
    assert check(mode="strict", tool_args_match_overrides={"search": ["query"]}) == 1.0
    assert check(mode="strict", tool_args_match_overrides={"search": lambda o, r: True}) == 1.0
    with pytest.raises(ValueError, match="unknown trajectory match mode"):
        trajectory_match(mode="fuzzy")


def random_trajectory(rng: random.Random) -> list[dict]:
    messages = [{"role": "user", "content": "q"}]
    for _ in range(rng.randint(0, 3)):
        calls = [
            call(
                rng.choice(["search", "lookup"]),
                **{k: rng.choice([1, 2]) for k in rng.sample(["a", "b"], rng.randint(0, 2))},
            )
            for _ in range(rng.randint(1, 3))
        ]
        messages.append(ai(*calls))
        messages += [{"role": "tool", "content": "r", "tool_call_id": c["id"]} for c in calls]
    messages.append(ai(content="answer"))
    return messages


def mutate(rng: random.Random, trajectory: list[dict]) -> list[dict]:
    copy = json.loads(json.dumps(trajectory))
    steps = [m for m in copy if m.get("tool_calls")]
    choice = rng.randint(0, 4)
    if steps and choice == 0:  # drop a call
        step = rng.choice(steps)
        if len(step["tool_calls"]) > 1:
            step["tool_calls"].pop(rng.randrange(len(step["tool_calls"])))
    elif steps and choice == 1:  # change arguments
        target = rng.choice(rng.choice(steps)["tool_calls"])["function"]
        args = json.loads(target["arguments"])
        args[rng.choice(["a", "b", "c"])] = rng.choice([1, 2, 3])
        target["arguments"] = json.dumps(args)
    elif choice == 2:  # an extra step
        copy.insert(len(copy) - 1, ai(call("lookup", a=1)))
    elif steps and choice == 3:  # reorder calls within a step
        rng.shuffle(rng.choice(steps)["tool_calls"])
    return copy


@pytest.mark.parametrize(
    ("mode", "args_mode"),
    list(
        itertools.product(
            ["strict", "unordered", "subset", "superset"], ["exact", "ignore", "subset", "superset"]
        )
    ),
)
def test_same_verdicts_as_agentevals(mode, args_mode):
    rng = random.Random(f"{mode}-{args_mode}")
    ours = trajectory_match(mode=mode, tool_args_match_mode=args_mode)
    theirs = create_trajectory_match_evaluator(
        trajectory_match_mode=mode, tool_args_match_mode=args_mode
    )
    agreed = 0
    for _ in range(60):
        reference = random_trajectory(rng)
        output = mutate(rng, reference) if rng.random() < 0.8 else random_trajectory(rng)
        expected = theirs(outputs=output, reference_outputs=reference)["score"]
        got = ours(output=output, expected_output=reference).value
        assert got == float(expected), (mode, args_mode, output, reference)
        agreed += 1
    assert agreed == 60
