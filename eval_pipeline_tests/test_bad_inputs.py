"""Bad input that must not hurt: each file in bad_inputs/ replaces drive_thru's cases and
``eval-pipeline run`` refuses it in well under a second, exit 2, naming the file and the
line (each file's first line says what it expects: ``# expect: [line N: ]message``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from eval_pipeline.cli import main
from eval_pipeline_tests.helpers import clean_cli_env, copy_project

FILES = sorted((Path(__file__).parent / "bad_inputs").glob("*.yaml"))


@pytest.mark.parametrize("bad", FILES, ids=[f.stem for f in FILES])
def test_a_bad_cases_file_is_refused_naming_the_file_and_line(bad, tmp_path, monkeypatch):
    project = copy_project(tmp_path)
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    cases = project.parent / "datasets" / "drive_thru" / "cases.yaml"
    text = bad.read_text()
    cases.write_text(text)
    expected = text.splitlines()[0].removeprefix("# expect: ")
    line, message = expected.split(": ", 1) if expected.startswith("line ") else ("", expected)
    started = time.perf_counter()
    done = CliRunner().invoke(main, ["run", "--suite", "drive_thru"], terminal_width=400)
    assert time.perf_counter() - started < 20
    said = " ".join(done.output.split())
    assert done.exit_code == 2, done.output
    assert message in said, said
    where = f"cases.yaml:{line.removeprefix('line ')}" if line else "cases.yaml"
    assert where in said, said
