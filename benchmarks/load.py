"""Load: one suite of 2,000 cases through ``eval-pipeline run`` at concurrency 64.

    .venv/bin/python benchmarks/load.py [--cases 2000] [--concurrency 64]
    .venv/bin/python benchmarks/load.py --suite-file 100000

A copy of the examples whose drive_thru cases are replicated to ``--cases`` ids (each a
distinct case to the memo: its utterance is), on the offline model (no HTTP: what is
measured is our own overhead; ``--http``: behind a local server), in a fresh EVAL_HOME
with a SQLite store. Three runs, each
its own CLI process: cold; again (every item reused from the memo); and cold again with
``--cache off`` (every item run, the memo neither read nor written). For each: the wall
time, the process's peak RSS (``/usr/bin/time -f %M``), and how much the results store
grew (its file, and the rows added per table).

``--suite-file N``: instead, the memory a large suite file costs. drive_thru's cases as a
JSONL file of N cases (``jsonl_project``: the 47 as they are, then copies with ids and
utterances of their own in the full tier, each line padded to about 600 bytes, as the
100,000-case, 60 MB file of issue 47), run on the smoke tier (its 11 cases), against the
examples' own 47-case suite on the smoke tier: each run's wall and CPU time and peak RSS
(``measured``), and what the large file adds to the peak, over the file's size.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CLI = str(Path(sys.executable).parent / "eval-pipeline")
TABLES = ("runs", "item_outputs", "item_scores", "item_memo", "summaries")


def project(folder: Path, cases: int) -> Path:
    """The examples, drive_thru's cases replicated to ``cases`` distinct ones."""
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".eval_home", "recordings",
                                                                     "__pycache__"))  # fmt: skip
    path = folder / "datasets" / "drive_thru" / "cases.yaml"
    seed = yaml.safe_load(path.read_text())["cases"]
    grown = []
    for i in range(cases):
        case = dict(seed[i % len(seed)])
        case["id"] = f"{case['id']}-{i:05d}"
        case["input"] = {**case["input"], "customer_utterance":
                         f"{case['input']['customer_utterance']} (order {i})"}  # fmt: skip
        grown.append(case)
    path.write_text(yaml.safe_dump({"cases": grown}, sort_keys=False))
    return folder


NOTE = "generated for the load benchmark: a line about as long as a team's own case. "


def jsonl_project(folder: Path, cases: int) -> Path:
    """A copy of the examples whose drive_thru cases are one JSONL file of ``cases`` cases
    (the 47 as they are, then copies in the full tier with ids and utterances of their own,
    each line padded to about 600 bytes with a metadata note); that file."""
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".eval_home", "recordings",
                                                                     "__pycache__"))  # fmt: skip
    dataset = folder / "datasets" / "drive_thru"
    seed = yaml.safe_load((dataset / "cases.yaml").read_text())["cases"]
    (dataset / "cases.yaml").unlink()
    path = dataset / "cases.jsonl"
    with path.open("w", encoding="utf-8") as file:
        for i in range(cases):
            case = json.loads(json.dumps(seed[i % len(seed)]))
            if i >= len(seed):
                case["id"] = f"{case['id']}-{i:06d}"
                case["input"]["customer_utterance"] += f" (order {i})"
                case["metadata"]["tier"] = "full"
            line = json.dumps(case)
            case["metadata"]["note"] = (NOTE * 8)[: max(0, 580 - len(line))]
            file.write(json.dumps(case) + "\n")
    return path


# The CLI under a wrapper that reports its child's peak RSS and CPU time (Linux gives
# ru_maxrss in KiB, macOS in bytes).
MEASURE = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
           "used = resource.getrusage(resource.RUSAGE_CHILDREN); "
           "kib = used.ru_maxrss / (1024 if sys.platform == 'darwin' else 1); "
           "print(f'\\n{kib} {used.ru_utime + used.ru_stime} {code}', file=sys.stderr)")


@dataclass(frozen=True)
class Measured:
    seconds: float  # wall
    cpu_s: float
    peak_mib: float
    code: int
    output: str


def measured(folder: Path, env: dict[str, str], *args: str) -> Measured:
    """``eval-pipeline ARGS`` run in ``folder``: its wall and CPU time, peak RSS, exit code."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURE, CLI, *args], cwd=folder, env=env,
                          capture_output=True, text=True)  # fmt: skip
    seconds = time.perf_counter() - started
    kib, cpu, code = done.stderr.strip().splitlines()[-1].split()
    return Measured(seconds, float(cpu), float(kib) / 1024, int(code), done.stdout + done.stderr)


def suite_file(cases: int, tmp: Path, env: dict[str, str]) -> None:
    """The examples' suite and a ``cases``-case JSONL file, each on the smoke tier."""
    path = jsonl_project(tmp / "large", cases)
    size = path.stat().st_size / 2**20
    print(f"drive_thru on the smoke tier (11 cases), offline model, SQLite; the large file: "
          f"{cases} cases, {size:.1f} MiB\n")
    print("| suite | cases | wall s | CPU s | peak RSS MiB | over the 47-case suite MiB | "
          "× the file |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    shutil.copytree(EXAMPLES, tmp / "own", ignore=shutil.ignore_patterns(
        ".eval_home", "recordings", "__pycache__"))  # fmt: skip
    base = None
    for name, folder, count in (("the examples' cases.yaml", tmp / "own", 47),
                                ("cases.jsonl", tmp / "large", cases)):  # fmt: skip
        run_env = env | {"EVAL_HOME": str(tmp / f"home-{folder.name}")}
        done = measured(folder, run_env, "run", "--suite", "drive_thru", "--tier", "smoke")
        if done.code not in (0, 1):
            sys.exit(f"run failed ({done.code}):\n{done.output}")
        base = base or done
        over = done.peak_mib - base.peak_mib
        ratio = f"{over / size:.2f}" if done is not base else ""
        print(f"| {name} | {count} | {done.seconds:.1f} | {done.cpu_s:.1f} | "
              f"{done.peak_mib:.0f} | {over:.0f} | {ratio} |")  # fmt: skip


def rows(store: Path) -> dict[str, int]:
    if not store.exists():
        return dict.fromkeys(TABLES, 0)
    with sqlite3.connect(store) as conn:
        return {t: conn.execute(f"select count(*) from {t}").fetchone()[0] for t in TABLES}


def run(
    folder: Path, env: dict[str, str], concurrency: int, *extra: str
) -> tuple[float, float, int]:
    """One CLI run: (seconds, peak RSS MiB, exit code)."""
    command = ["/usr/bin/time", "-f", "%M", CLI, "run", "--suite", "drive_thru",
               "--concurrency", str(concurrency), *extra]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    peak_kib = int(done.stderr.strip().splitlines()[-1])
    if done.returncode not in (0, 1):
        sys.exit(f"run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return seconds, peak_kib / 1024, done.returncode


@contextlib.contextmanager
def model_server(http: bool) -> Iterator[dict[str, str]]:
    """The environment of the model: the offline one in the process, or (``http``) the
    offline model behind a local server in a process of its own, 50 ms per call."""
    if not http:
        yield {}
        return
    port = 8199
    server = subprocess.Popen(
        [sys.executable, "-m", "eval_pipeline_tests.model_server", "--port", str(port),
         "--latency-ms", "50"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(3)
        yield {"EVAL_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "EVAL_LLM_API_KEY": "sk-x",
               "EVAL_LLM_MODEL": "gpt-4o-mini"}  # fmt: skip
    finally:
        server.terminate()
        server.wait()


def clean_env() -> dict[str, str]:
    """This environment without the settings of a model, Langfuse or a store."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("EVAL_", "LANGFUSE_", "OPENAI_", "DAGSTER_"))}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--http", action="store_true", help="the model behind a local server")
    parser.add_argument("--suite-file", type=int, metavar="N",
                        help="instead: the peak memory of a suite file of N cases")  # fmt: skip
    args = parser.parse_args()
    if args.suite_file:
        with tempfile.TemporaryDirectory(prefix="eval-load-") as tmp:
            suite_file(args.suite_file, Path(tmp), clean_env())
        return
    with tempfile.TemporaryDirectory(prefix="eval-load-") as tmp, model_server(args.http) as llm:
        folder = project(Path(tmp) / "project", args.cases)
        home = Path(tmp) / "home"
        store = home / "results.sqlite"
        env = clean_env() | {"EVAL_HOME": str(home), **llm}
        where = "a local HTTP server (50 ms per call)" if args.http else "the offline model"
        print(f"{args.cases} cases, concurrency {args.concurrency}, {where}, SQLite\n")
        print("| run | wall s | items/s | peak RSS MiB | store grew MiB | rows added |")
        print("|---|---:|---:|---:|---:|---|")
        for name, extra in (("cold", ()), ("again (memo)", ()),
                            ("cold, --cache off", ("--cache", "off"))):  # fmt: skip
            size, before = (store.stat().st_size if store.exists() else 0), rows(store)
            seconds, peak, _ = run(folder, env, args.concurrency, *extra)
            after = rows(store)
            added = ", ".join(f"{t} +{after[t] - before[t]}" for t in TABLES
                              if after[t] > before[t])  # fmt: skip
            grew = (store.stat().st_size - size) / 2**20
            print(f"| {name} | {seconds:.1f} | {args.cases / seconds:.0f} | {peak:.0f} | "
                  f"{grew:.1f} | {added} |")  # fmt: skip


if __name__ == "__main__":
    main()
