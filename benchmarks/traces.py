"""Production-trace streaming: memory stays flat while sampling 200k traces over HTTP.

    .venv/bin/python benchmarks/traces.py [--traces 200000] [--cap 200]

The local Langfuse test server generates root observations on the fly (nothing held in
memory); LangfuseTraceSource pages through them with the real SDK (1,000 per request) and
the bottom-k sampler keeps `cap` of them. Resident memory (VmRSS) is read every 25k traces.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"  # the example suites' project
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(EXAMPLES))

from eval_pipeline.agents.project import load_project  # noqa: E402
from eval_pipeline.core.traces.sampling import SamplingConfig, sample  # noqa: E402
from eval_pipeline.integrations.trace_sources import LangfuseTraceSource  # noqa: E402
from eval_pipeline_tests.langfuse_server import LangfuseTestServer  # noqa: E402

DAY = date(2026, 11, 20)
CATEGORIES = ("simple", "quantity", "multi_item", "modifiers", "greeting", "not_on_menu")


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def synthetic(total: int):
    start = datetime(DAY.year, DAY.month, DAY.day, tzinfo=UTC)
    line = {"item_id": "hash-brown", "name": "Hash Brown", "quantity": 2, "modifiers": []}
    output = json.dumps(
        {
            "current_order": {"items": [line], "finalized": False},
            "tools_called": ["lookup_menu_item", "add_item_to_order"],
            "response": "Two hash browns. Anything else?",
        }
    )

    def page(offset: int, limit: int):
        rows = []
        for n in range(offset, min(offset + limit, total)):
            moment = start + timedelta(milliseconds=n * 400)
            rows.append(
                {
                    "id": f"{n:016x}",
                    "traceId": f"{n:032x}",
                    "projectId": "bench",
                    "type": "AGENT",
                    "name": "drive-thru-agent",
                    "startTime": moment.isoformat().replace("+00:00", "Z"),
                    "input": json.dumps({"customer_utterance": f"two hash browns #{n}"}),
                    "output": output,
                    "metadata": {"category": CATEGORIES[n % len(CATEGORIES)]},
                    "latency": 1.2,
                    "totalCost": 0.0004,
                }
            )
        following = offset + limit
        return rows, (following if following < total else None)

    return page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--traces", type=int, default=200_000)
    parser.add_argument("--cap", type=int, default=200)
    args = parser.parse_args()
    readings: list[tuple[int, float]] = []
    drive_thru = load_project(EXAMPLES / "eval-pipeline.yaml").suite("drive_thru")
    with LangfuseTestServer() as server:
        server.set_observation_source(synthetic(args.traces))
        source = LangfuseTraceSource(server.settings())

        def watched(records):
            for n, record in enumerate(records, start=1):
                if n % 25_000 == 0:
                    readings.append((n, rss_mib()))
                yield record

        before = rss_mib()
        started = time.perf_counter()
        kept = sample(
            watched(source.traces(drive_thru, DAY)),
            SamplingConfig(cap=args.cap, stratify_by="metadata.category"),
        )
        elapsed = time.perf_counter() - started
        requests = server.requests[("GET", "/api/public/v2/observations")]
    print(
        f"{args.traces} traces in {requests} requests, {elapsed:.1f} s "
        f"({args.traces / elapsed:,.0f} traces/s), sample of {len(kept)}\n"
    )
    print("| traces read | RSS MiB | growth since start MiB |")
    print("|---:|---:|---:|")
    print(f"| 0 | {before:.0f} | 0 |")
    for n, mib in readings:
        print(f"| {n:,} | {mib:.0f} | {mib - before:+.0f} |")


if __name__ == "__main__":
    main()
