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
