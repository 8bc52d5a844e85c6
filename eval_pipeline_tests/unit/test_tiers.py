"""The tests' tiers (docs/getting-started.md, "The tests in tiers"): every test module is in
one of the three folders, conftest marks each test with its folder's name, and a test of a
unit module marked slow counts as integration, out of the unit tier."""

from pathlib import Path

import pytest

from eval_pipeline_tests.conftest import TIERS

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_is_in_a_tier_folder():
    modules = list(TESTS.rglob("test_*.py"))
    assert modules and {m.parent.name for m in modules} == set(TIERS)
    assert all(m.parent.parent == TESTS for m in modules)


def test_a_unit_test_is_marked_unit_only(request):
    assert request.node.get_closest_marker("unit")
    assert not any(request.node.get_closest_marker(t) for t in ("integration", "e2e"))


@pytest.mark.slow
def test_a_slow_test_of_a_unit_module_counts_as_integration(request):
    assert request.node.get_closest_marker("integration")
    assert not request.node.get_closest_marker("unit")
