"""Memory that does not grow with the suite file beyond its size (issue 47, "suites
stream"): 100,000 cases (a 60 MB JSONL) peaked at 739 MB on the smoke tier, about 12
times the file, every case held as Python objects and copied again to hash the dataset.
Measured as a team meets it: the CLI in a process of its own, from a copy of the examples,
its peak RSS against the same run on the examples' own 47 cases (benchmarks/load.py
``--suite-file`` measures the 100,000, the numbers are in BENCHMARKS.md)."""

from __future__ import annotations

import os
import shutil

from eval_pipeline_tests.helpers import CONFIG_ENV, EXAMPLES, benchmark

CASES = 20_000  # about 11 MiB: enough to see 3× from 12×, in a test's time


def test_a_large_suite_file_costs_at_most_three_times_its_size_on_the_smoke_tier(tmp_path):
    load = benchmark("load")
    large = load.jsonl_project(tmp_path / "large", CASES)
    own = tmp_path / "own"
    shutil.copytree(EXAMPLES, own, ignore=shutil.ignore_patterns(".eval_home", "recordings",
                                                                 "__pycache__"))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV}
    runs = {name: load.measured(tmp_path / name, env | {"EVAL_HOME": str(tmp_path / name / "h")},
                                "run", "--suite", "drive_thru", "--tier", "smoke")
            for name in ("own", "large")}  # fmt: skip
    for done in runs.values():
        assert done.code in (0, 1), done.output
        assert "Cases: 11 " in done.output and "Traceback" not in done.output
    size = large.stat().st_size / 2**20
    grew = runs["large"].peak_mib - runs["own"].peak_mib
    assert grew <= 3 * size, (f"{CASES} cases ({size:.1f} MiB) added {grew:.0f} MiB to the "
                              f"peak ({runs['own'].peak_mib:.0f} → {runs['large'].peak_mib:.0f})")
