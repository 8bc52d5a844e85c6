"""Scale: score and summarise 100k items in the results store, on SQLite and on Postgres.

    .venv/bin/python benchmarks/scale.py [--items 100000] [--backend sqlite postgres]

Synthetic run of the drive_thru suite: the golden cases are replicated to ``--items`` ids,
each output is the expected order (every 10th one loses an item, every 50th is an agent
error). Timed: writing the outputs (setup), then the two stages an evaluation runs after
the agent — scoring (read outputs, three evaluators, write 3 scores per item) and the
summary (read outputs and scores, aggregate, mark the run complete). Peak memory is the
process's peak RSS (each backend runs in its own process). Postgres: EVAL_TEST_PG_URL, or
a throwaway local cluster (initdb/pg_ctl). Also printed: the size of the Dagster metadata
the summary asset would attach, which must not grow with the number of items.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"  # the example suites' project
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(EXAMPLES))

from eval_pipeline.agents.project import load_project  # noqa: E402
from eval_pipeline.core import evaluation  # noqa: E402
from eval_pipeline.core.store.records import ItemOutput, RunRecord  # noqa: E402
from eval_pipeline.core.store.results_store import ResultsStore  # noqa: E402
from eval_pipeline.core.suites.cases import GoldenCase  # noqa: E402


def drive_thru():
    return load_project(EXAMPLES / "eval-pipeline.yaml").suite("drive_thru")


def synthetic(items: int) -> tuple[list[GoldenCase], list[ItemOutput]]:
    base = drive_thru().load_cases()
    cases, outputs = [], []
    for n in range(items):
        case = base[n % len(base)]
        cases.append(case.model_copy(update={"id": f"{case.id}-{n}"}))
        expected = list((case.expected_output or {}).get("expected_items", []))
        if n % 10 == 9 and expected:
            expected = expected[:-1]
        order = [{"item_id": i["item_id"], "name": i["name"], "quantity": i.get("quantity", 1),
                  "size": "regular", "modifiers": []} for i in expected]  # fmt: skip
        output = {"current_order": {"items": order, "finalized": False},
                  "tools_called": ["lookup_menu_item", "add_item_to_order"] * len(order),
                  "response": "Anything else?"}  # fmt: skip
        error = "RateLimitError: 429" if n % 50 == 49 else None
        outputs.append(ItemOutput(f"{case.id}-{n}", 0, None if error else output, error=error,
                                  latency_ms=200.0 + n % 300, input_tokens=900,
                                  output_tokens=60, cost_usd=0.0002))  # fmt: skip
    return cases, outputs


def measure(url: str, items: int) -> dict[str, float]:
    suite = drive_thru()
    cases, outputs = synthetic(items)
    store = ResultsStore(url)
    run = RunRecord(run_id=f"scale-{items}-{time.time_ns()}", suite=suite.name,
                    prompt_name=suite.prompt_name, prompt_version="v1", prompt_hash="synthetic",
                    dataset_version="synthetic", model="synthetic", tier="full")  # fmt: skip
    store.create_run(run)
    start = time.perf_counter()
    store.write_outputs(run.run_id, outputs)
    written = time.perf_counter()
    del outputs
    scores = evaluation.score(store, run.run_id, suite, cases)
    scored = time.perf_counter()
    summary = evaluation.summarise(store, run.run_id, suite, cases)
    summarised = time.perf_counter()
    assert len(scores) == 3 * items and summary.n_items == items
    return {
        "write_outputs_s": written - start,
        "score_s": scored - written,
        "summarise_s": summarised - scored,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "summary_json_kib": len(json.dumps(summary.to_dict(), default=str)) / 1024,
        "order_correctness": summary.metrics["order_correctness"],
    }


def postgres_url(stack: ExitStack) -> str:
    if os.environ.get("EVAL_TEST_PG_URL"):
        return os.environ["EVAL_TEST_PG_URL"]
    from eval_pipeline_tests.pg import fresh_database, local_cluster

    return stack.enter_context(fresh_database(stack.enter_context(local_cluster())))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--backend", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--url", help=argparse.SUPPRESS)  # internal: one backend, one process
    args = parser.parse_args()
    if args.url:
        print(json.dumps(measure(args.url, args.items)))
        return
    print(f"{args.items:,} items (drive_thru, 3 evaluators → {3 * args.items:,} scores)\n")
    print(
        "| store | write outputs s | score s | summarise s | score + summarise s "
        "| peak RSS MiB | summary JSON KiB | target |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        for backend in args.backend:
            url = f"sqlite:///{tmp}/scale.sqlite" if backend == "sqlite" else postgres_url(stack)
            cmd = [sys.executable, __file__, "--items", str(args.items), "--url", url]
            result = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                               text=True).stdout.splitlines()[-1])  # fmt: skip
            total = result["score_s"] + result["summarise_s"]
            print(f"| {backend} | {result['write_outputs_s']:.1f} | {result['score_s']:.1f} | "
                  f"{result['summarise_s']:.1f} | {total:.1f} | {result['peak_rss_mib']:.0f} | "
                  f"{result['summary_json_kib']:.1f} | < 30 s, < 1536 MiB |")  # fmt: skip


if __name__ == "__main__":
    main()
