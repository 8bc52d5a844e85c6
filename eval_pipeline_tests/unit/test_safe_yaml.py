"""safe_yaml reads with libyaml's parser and falls back to PyYAML's own for every document
libyaml refuses, so values are the pure loader's and so is every error a user reads."""

from __future__ import annotations

import pytest
import yaml

from eval_pipeline.core.util import safe_yaml
from eval_pipeline_tests.helpers import ROOT

FAST, PURE = safe_yaml.LOADERS[0], safe_yaml.StrictLoader


def test_libyaml_is_used_and_reads_every_example_file_as_the_pure_loader_does():
    assert FAST is not PURE, "PyYAML without libyaml: every file is read in pure Python"
    files = sorted((ROOT / "examples").rglob("*.yaml")) + sorted((ROOT / "deploy").rglob("*.yaml"))
    assert len(files) > 10
    for file in files:
        text = file.read_text(encoding="utf-8")
        assert yaml.load(text, Loader=FAST) == yaml.load(text, Loader=PURE), file
        assert safe_yaml.load(text) == yaml.load(text, Loader=PURE), file


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("a: 1\na: 2\n", "the key 'a' is given twice (line 1 and line 2): keep one"),
        ("a: [1, 2\n", "expected ',' or ']', but got"),  # libyaml: "did not find expected"
        ("a: b: c\n", "mapping values are not allowed here"),  # libyaml: "in this context"
        ("when: 2024-01-01\n", "a date or time (tag:yaml.org,2002:timestamp) is not a JSON"),
        ("[" * 3000 + "]" * 3000, "values nested deeper than 200 levels"),  # libyaml: 1,000
    ],
)
def test_a_refused_document_says_what_the_pure_loader_says_with_its_line(text, said):
    with pytest.raises(yaml.YAMLError) as refused:
        safe_yaml.load(text)
    assert said in str(refused.value)
    if "nested" not in said:
        assert "^" in str(refused.value)  # the line's text, pointed at (libyaml shows none)
        with pytest.raises(yaml.YAMLError) as pure:
            yaml.load(text, Loader=PURE)
        assert str(refused.value) == str(pure.value)


def _outcome(read, text: str):
    try:
        return "read", read(text)
    except yaml.YAMLError as exc:
        return "refused", str(exc)


def _marks(node) -> list:
    """A node tree's tags, values and lines, in order."""
    if node is None:
        return []
    children = node.value if isinstance(node.value, list) else []
    flat = [child for pair in children for child in (pair if isinstance(pair, tuple) else (pair,))]
    head = [(node.tag, node.start_mark.line, None if flat else node.value)]
    return head + [mark for child in flat for mark in _marks(child)]


DOCUMENTS = [
    *(p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").rglob("cases*.yaml"))),
    "", "# nothing\n", "cases: []\n", "- a\n- b: 1\n", "a: 1\na: 2\n", "a: [1, 2\n",
    "when: 2024-01-01\n", "x: &a [1, 2]\ny: *a\n", "[" * 3000 + "]" * 3000,
]  # fmt: skip


@pytest.mark.parametrize("text", DOCUMENTS)
def test_compose_and_load_reads_once_what_compose_then_load_read(text):
    """A cases file is composed (its lines) and loaded in one pass: the same value, the
    same nodes and lines, the same refusal as composing it and loading it apart."""
    apart = _outcome(lambda t: (safe_yaml._read(yaml.compose, t), safe_yaml.load(t)), text)
    once = _outcome(safe_yaml.compose_and_load, text)
    assert once[0] == apart[0]
    if once[0] == "refused":
        assert once[1] == apart[1]
    else:
        assert once[1][1] == apart[1][1]
        assert _marks(once[1][0]) == _marks(apart[1][0])
