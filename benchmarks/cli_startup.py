"""CLI start-up: the CPU (user + sys) an `eval-pipeline` command costs, this checkout
against another (``--before``, e.g. a second checkout of main), alternated in one run.

    .venv/bin/python benchmarks/cli_startup.py --before /path/to/other/checkout [--runs 5]
        [--only COMMAND ...]

CPU, not wall time: the tests spawn the CLI hundreds of times on a shared machine, where
the wall clock says more about the load than about the command. Each command runs from a
copy of the examples' project with its own EVAL_HOME; a tree's code is put first on
PYTHONPATH, so one interpreter and one set of installed packages serve both.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from eval_pipeline.settings import copy_examples_project

HERE = Path(__file__).resolve().parents[1]
COMMANDS = {
    "--help": ["--help"],
    "run --help": ["run", "--help"],
    "suites": ["suites"],
    "verdicts": ["verdicts"],
    "run --suite drive_thru --tier smoke": ["run", "--suite", "drive_thru", "--tier", "smoke"],
}


def cpu_seconds(tree: Path, args: list[str], project: Path, home: Path) -> float:
    """The CPU one command cost in its process (and any it waited for)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "EVAL_HOME": str(home),
           "DAGSTER_HOME": str(home / "dagster"), "EVAL_PROJECT": str(project)}  # fmt: skip
    for var in ("EVAL_LLM_BASE_URL", "OPENAI_API_KEY", "LANGFUSE_PUBLIC_KEY"):
        env.pop(var, None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "eval_pipeline.cli", *args], env=env, check=True,
                   capture_output=True, cwd=project.parent)  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout to compare against")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=sorted(COMMANDS), default=list(COMMANDS),
                        help="measure these commands only")  # fmt: skip
    args = parser.parse_args()
    commands = {name: COMMANDS[name] for name in args.only}
    trees = ({"before": args.before.resolve()} if args.before else {}) | {"after": HERE}
    with tempfile.TemporaryDirectory(prefix="cli-startup-") as tmp:
        projects = {name: copy_examples_project(Path(tmp) / name, tree / "examples")
                    for name, tree in trees.items()}  # fmt: skip
        costs: dict[tuple[str, str], list[float]] = {}
        for run in range(args.runs):
            for command, argv in commands.items():
                for name, tree in trees.items():  # alternated: the same load for both
                    home = Path(tmp) / f"home-{name}-{run}"  # (a fresh store each run)
                    costs.setdefault((command, name), []).append(
                        cpu_seconds(tree, argv, projects[name], home))
    print(f"CPU seconds (user + sys) per command, median of {args.runs} runs, alternated\n")
    columns = list(trees)
    header = "| command | " + " | ".join(columns) + (" | after / before |" if args.before
                                                       else " |")  # fmt: skip
    print(header)
    print("|---" * (len(columns) + 1 + bool(args.before)) + "|")
    for command in commands:
        medians = {name: statistics.median(costs[command, name]) for name in columns}
        cells = " | ".join(f"{medians[name]:.2f}" for name in columns)
        ratio = f" | {medians['after'] / medians['before']:.2f}" if args.before else ""
        print(f"| `eval-pipeline {command}` | {cells}{ratio} |")


if __name__ == "__main__":
    main()
