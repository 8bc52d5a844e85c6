"""Incremental re-evaluation: a warm re-run of an unchanged suite against the cold run.

    .venv/bin/python benchmarks/incremental.py [--suite drive_thru] [--latency-ms 200]
        [--repeats 3] [--concurrency 8]

Each scenario is a whole evaluation (agent outputs through the memo, scores, summary) of
the suite's full tier against the offline model behind the local OpenAI-compatible server
(fixed latency L per call, its own process), on a fresh SQLite results store:
cold (empty memo) → warm (nothing changed) → one case edited → prompt version changed →
refresh (the nightly policy). Model calls are counted by the server.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"  # the example suites' project
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(EXAMPLES))

import yaml  # noqa: E402

from eval_pipeline import api  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from throughput import ModelServer  # noqa: E402


def edit_one_case(dataset_dir: Path) -> str:
    """Append a word to the first case's first string input; returns its id."""
    path = next(p for p in sorted(dataset_dir.glob("cases*.yaml")))
    document = yaml.safe_load(path.read_text())
    cases = document["cases"] if isinstance(document, dict) else document
    first = cases[0]
    key = next(k for k, v in first["input"].items() if isinstance(v, str))
    first["input"][key] += " (edited)"
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    return first["id"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--suite", default="drive_thru")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    server = ModelServer(args.latency_ms, None)
    with tempfile.TemporaryDirectory() as tmp:
        examples = Path(tmp) / "examples"  # a copy: one case is edited
        shutil.copytree(EXAMPLES, examples, ignore=shutil.ignore_patterns(".eval_home", "traces"))
        os.environ |= {"EVAL_HOME": f"{tmp}/home", "EVAL_LLM_BASE_URL": server.base_url,
                       "EVAL_LLM_API_KEY": "benchmark", "EVAL_LLM_MODEL": "offline"}  # fmt: skip
        rows = []

        def evaluate(name: str, version: int, cache: str = "reuse") -> None:
            """One run as the CLI and ``evaluate()`` make it (service.run_in_process)."""
            calls, start = server.calls(), time.perf_counter()
            result = api.evaluate(args.suite, project=examples / "eval-pipeline.yaml",
                                  prompt_version=version, tier="full", repeats=args.repeats,
                                  concurrency=args.concurrency, cache=cache)  # fmt: skip
            outputs = result.outputs
            rows.append((name, cache, len(outputs), sum(1 for o in outputs if o.source_run_id),
                         server.calls() - calls, time.perf_counter() - start))  # fmt: skip

        try:
            evaluate("cold: empty memo", 1)
            evaluate("warm: nothing changed", 1)
            edited = edit_one_case(examples / "datasets" / args.suite)
            evaluate(f"one case edited ({edited})", 1)
            evaluate("prompt v1 → v2", 2)
            evaluate("nightly: refresh", 1, cache="refresh")
        finally:
            server.close()
    cold_s, cold_calls = rows[0][5], rows[0][4]
    print(f"{args.suite}, full tier × {args.repeats} repeats, L = {args.latency_ms:g} ms, "
          f"C = {args.concurrency}\n")  # fmt: skip
    print("| scenario | cache | items | reused | model calls | wall s | vs cold (time) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, cache, items, reused, calls, wall in rows:
        print(f"| {name} | {cache} | {items} | {reused} | {calls} | {wall:.2f} | "
              f"{100 * wall / cold_s:.1f}% |")  # fmt: skip
    print(
        f"\nTarget: warm re-run 0 model calls (measured {rows[1][4]} of {cold_calls}) and "
        f"< 10% of the cold time (measured {100 * rows[1][5] / cold_s:.1f}%)."
    )


if __name__ == "__main__":
    main()
