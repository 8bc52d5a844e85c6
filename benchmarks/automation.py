"""Automation latency: prompt_label_sensor ticks against a Langfuse API server with many prompts.

    .venv/bin/python benchmarks/automation.py [--prompts 500] [--ticks 20]

Seeds the local Langfuse test server (real SDK over real HTTP on 127.0.0.1) with N prompts
each labelled production and half of them staging, plus the drive-thru prompt, then times
sensor ticks: the first (records state), steady ones (nothing moved), and one right after a
label move (the tick that requests the run). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dagster import SensorResult, build_sensor_context, instance_for_test

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"  # the example suites' project
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(EXAMPLES))

from eval_pipeline.defs import build_definitions  # noqa: E402
from eval_pipeline.defs.resources import (  # noqa: E402
    LangfuseResource,
    LLMResource,
    ResultsStoreResource,
    ServicesResource,
    SuitesResource,
)
from eval_pipeline_tests.langfuse_server import LangfuseTestServer  # noqa: E402

PROMPT = "drive-thru/orchestrator"
PROJECT = EXAMPLES / "eval-pipeline.yaml"


def tick(sensor, instance, resources, cursor):
    with build_sensor_context(instance=instance, cursor=cursor, resources=resources) as ctx:
        start = time.perf_counter()
        result = sensor(ctx)
        elapsed = time.perf_counter() - start
    if isinstance(result, SensorResult):
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
    return result, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=500)
    parser.add_argument("--ticks", type=int, default=20)
    args = parser.parse_args()
    with LangfuseTestServer() as server, tempfile.TemporaryDirectory() as tmp:
        for i in range(args.prompts):
            labels = ["production", "staging"] if i % 2 else ["production"]
            server.seed_prompt(f"team-{i // 50}/agent-{i:04d}", "You are agent {{n}}.",
                               labels=labels)  # fmt: skip
        server.seed_prompt(PROMPT, "v1 {{menu}}", labels=["production"])
        server.seed_prompt(PROMPT, "v2 {{menu}}", labels=["staging"])
        langfuse = LangfuseResource(public_key=server.public_key, secret_key=server.secret_key,
                                    base_url=server.base_url)  # fmt: skip
        suites = SuitesResource(project=str(PROJECT))
        resources = {
            "results_store": ResultsStoreResource(url=f"sqlite:///{tmp}/results.sqlite"),
            "suites": suites,
            "services": ServicesResource(suites=suites, langfuse=langfuse),
            "langfuse": langfuse,
            "llm": LLMResource(),
        }
        sensor = build_definitions(PROJECT, resources=resources).resolve_sensor_def(
            "prompt_label_sensor"
        )
        with instance_for_test(temp_dir=tmp) as instance:
            first, first_s = tick(sensor, instance, resources, None)
            cursor = first.cursor
            before = sum(server.requests.values())
            steady = []
            for _ in range(args.ticks):
                result, elapsed = tick(sensor, instance, resources, cursor)
                assert not result.run_requests
                steady.append(elapsed)
            calls = (sum(server.requests.values()) - before) / args.ticks
            v3 = server.seed_prompt(PROMPT, "v3 {{menu}}")
            moved_at = time.perf_counter()
            server.client().update_prompt(name=PROMPT, version=v3, new_labels=["staging"])
            result, move_s = tick(sensor, instance, resources, cursor)
            to_request = time.perf_counter() - moved_at
            # one run per suite of that prompt (drive_thru and drive_thru_conversations)
            assert len({r.tags["eval/suite"] for r in result.run_requests}) == len(
                result.run_requests) >= 1  # fmt: skip
    print(f"{args.prompts + 1} prompts, 2 watched labels, {calls:.0f} HTTP requests per tick\n")
    print("| tick | median ms | p95 ms | max ms | target ms |")
    print("|---|---:|---:|---:|---:|")
    print(f"| first (records state) | {first_s * 1000:.0f} | | | 1000 |")
    q = statistics.quantiles(steady, n=20)
    print(f"| steady, nothing moved ({args.ticks} ticks) | {statistics.median(steady) * 1000:.0f} "
          f"| {q[18] * 1000:.0f} | {max(steady) * 1000:.0f} | 1000 |")  # fmt: skip
    print(f"| after a label move (requests 1 run) | {move_s * 1000:.0f} | | | 1000 |")
    print(
        f"\nLabel move → run requested, when the tick runs right after the move: "
        f"{to_request * 1000:.0f} ms (plus up to one sensor interval, 60 s by default)."
    )


if __name__ == "__main__":
    main()
