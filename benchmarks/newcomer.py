"""Newcomer path: wall time of `eval-pipeline demo` and of a smoke run, after install.

    .venv/bin/python benchmarks/newcomer.py [--runs 3]

Each run uses a fresh EVAL_HOME, so nothing is cached between runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent / "eval-pipeline"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
COMMANDS = {
    "demo": [str(BIN), "demo"],
    "run --suite drive_thru --tier smoke": [str(BIN), "run", "--suite", "drive_thru",
                                            "--tier", "smoke"],
}  # fmt: skip
TARGETS = {"demo": 60.0, "run --suite drive_thru --tier smoke": 15.0}


def time_command(cmd: list[str]) -> float:
    home = tempfile.mkdtemp(prefix="eval-bench-")
    env = {**os.environ, "EVAL_HOME": home, "DAGSTER_HOME": f"{home}/dagster"}
    try:
        start = time.perf_counter()
        # from the examples' folder, as docs/getting-started.md says (the demo finds them)
        subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=EXAMPLES)
        return time.perf_counter() - start
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=sorted(COMMANDS), help="time one command only")
    args = parser.parse_args()
    print("| command | median s | min s | max s | target s |")
    print("|---|---:|---:|---:|---:|")
    for name, cmd in COMMANDS.items():
        if args.only and name != args.only:
            continue
        times = [time_command(cmd) for _ in range(args.runs)]
        print(f"| `eval-pipeline {name}` | {statistics.median(times):.1f} | {min(times):.1f} "
              f"| {max(times):.1f} | {TARGETS[name]:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
