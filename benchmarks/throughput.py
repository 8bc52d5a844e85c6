"""Throughput against the physical limit of LLM-bound evaluation.

    .venv/bin/python benchmarks/throughput.py [--latency-ms 200] [--items 517]
        [--concurrency 1 8 32 64] [--reps 3] [--shards 2] [--scaling 1 2 4]
        [--rate-limit R] [--sequential-items 100] [--profile] [--plot benchmarks/throughput.png]
        [--runners ours "bare LangGraph" "langfuse run_experiment"]

The offline model runs behind the local OpenAI-compatible server in its own process,
answering every call L after taking it up, its own work inside L (and, with --rate-limit,
answering 429 + Retry-After beyond R calls per second). The drive-thru agent talks to it
through ChatOpenAI. With concurrency C and k model calls per item no runner can beat
C / (k·L) items per second (R / k under a rate limit): the table reports each runner's
items/s as a share of that limit. Runners, in the same process and run:
- ours: core.runner.run_agent (the path of every evaluation run, without the memo);
- bare LangGraph: the same compiled graph on the same chat model, ``graph.ainvoke`` per
  item under a semaphore, nothing read from the result: no runner, no adapter (no item
  scope, seed, usage ledger, output contract, subgraph streaming);
- langfuse: Langfuse(tracing_enabled=False).run_experiment on local data, same task,
  max_concurrency=C;
- ours, N shards: the run's items split as an evaluation run splits them
  (core/running/shards.py: round-robin items, C/N in flight each), each shard run_agent in
  a process of its own, forked from a server that imported our code once (multiprocessing's
  forkserver: core/evaluation/processes.py ``forked_from``), as a Dagster step or a
  CLI worker gets; the processes are started and warmed up (one item) before the clock
  starts;
- sequential: a plain loop awaiting one item after the other (the seed's runner).
With --scaling, a second table: items/s against the shard count at the top C. Then the
ceiling of ours (not under --rate-limit): the most a run of this agent can reach however
cheap the runner, the schedule bound of the items' call counts (slots idle at the end)
times the model's share of an item's time when items run one at a time.
CPU ms per call is the client process's CPU time (the server runs elsewhere) divided by
the model calls made. The machine is shared and noisy (the same run varies by ±15% at
C = 64), so at every C > 1 the two runners alternate --reps times and each row is the
median repetition, with the range of items/s beside it.
Then our own CPU per model call at the top C: raw HTTP, ChatOpenAI alone (through our
model client), bare LangGraph, ours, and ours − bare LangGraph, the median of the
differences of the repetitions (each pair alternated, so both saw the same minute).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import heapq
import io
import json
import math
import os
import pstats
import socket
import statistics
import sys
import time
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"  # the example suites' project
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(EXAMPLES))

from eval_examples.drive_thru.menu import load_menu  # noqa: E402

from eval_pipeline.agents.project import load_project  # noqa: E402
from eval_pipeline.core.evaluation.processes import forked_from  # noqa: E402
from eval_pipeline.core.running.runner import (  # noqa: E402
    RunnerConfig,
    jobs_of,
    run_agent,
    run_sync,
)
from eval_pipeline.core.running.shards import split  # noqa: E402
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry  # noqa: E402
from eval_pipeline.llm.model_settings import LLMSettings  # noqa: E402
from eval_pipeline_tests import model_server  # noqa: E402


@dataclass
class Row:
    runner: str
    concurrency: int
    items: int
    calls: int
    wall_s: float
    cpu_s: float
    server_cpu_s: float
    errors: int
    spread: tuple[float, float] = (0.0, 0.0)  # min and max items/s over the repetitions

    def items_per_s(self) -> float:
        return self.items / self.wall_s


class ModelServer:
    """The offline model over HTTP in a child process."""

    def __init__(self, latency_ms: float, rate_limit: float | None):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        argv = ["--port", str(self.port), "--latency-ms", str(latency_ms)]
        if rate_limit:
            argv += ["--rate-limit", str(rate_limit)]
        context = forked_from("__main__")
        self.process = context.Process(target=model_server.main, args=(argv,), daemon=True)
        self.process.start()
        deadline = time.monotonic() + 30
        while True:
            try:
                self.stats()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.exitcode is not None:
                    raise RuntimeError("the model server did not start") from None
                time.sleep(0.1)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=5) as r:
            return json.load(r)

    def calls(self) -> int:
        stats = self.stats()
        return stats["requests"] - stats["rate_limited"]

    def cpu_s(self) -> float:
        """CPU time the server process has used (user + system)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.process.terminate()
        self.process.join(timeout=10)


def median_of(rows: list[Row]) -> Row:
    """The median repetition by items/s, carrying the range of all of them."""
    ranked = sorted(rows, key=Row.items_per_s)
    rates = [r.items_per_s() for r in ranked]
    return replace(ranked[len(ranked) // 2], spread=(rates[0], rates[-1]))


def measure(server: ModelServer, runner: str, jobs, make_agent, concurrency: int) -> Row:
    agent = make_agent()  # a fresh model client per measurement, as per evaluation run
    calls, cpu, server_cpu = server.calls(), time.process_time(), server.cpu_s()
    start = time.perf_counter()
    errors = run_sync(RUNNERS[runner](agent, jobs, concurrency))
    return Row(runner, concurrency, len(jobs), server.calls() - calls,
               time.perf_counter() - start, time.process_time() - cpu,
               server.cpu_s() - server_cpu, errors)  # fmt: skip


async def ours(agent, jobs, concurrency: int) -> int:
    by_repeat: dict[int, list] = {}
    for case, repeat in jobs:
        by_repeat.setdefault(repeat, []).append(case)
    cases = by_repeat[0]
    repeats = len(by_repeat)
    assert all(len(v) == len(cases) for v in by_repeat.values()), "jobs are cases × repeats"
    outputs = await run_agent(agent, cases, RunnerConfig(concurrency=concurrency, repeats=repeats))
    return sum(1 for o in outputs if o.error)


async def langfuse_runner(agent, jobs, concurrency: int) -> int:
    from langfuse import Langfuse

    async def task(*, item, **kwargs):
        case, repeat = item["metadata"]["job"]
        return (await agent.run(case, repeat=repeat)).output

    data = [{"input": c.input, "expected_output": c.expected_output,
             "metadata": {"job": (c, r)}} for c, r in jobs]  # fmt: skip
    # Keys only to keep it from warning that it is disabled; with tracing off it sends nothing.
    client = Langfuse(tracing_enabled=False, public_key="pk-lf-benchmark",
                      secret_key="sk-lf-benchmark", host="http://127.0.0.1:9")  # fmt: skip
    # run_experiment is synchronous and runs its own event loop: keep it off ours.
    result = await asyncio.to_thread(client.run_experiment, name="throughput", data=data,
                                     task=task, max_concurrency=concurrency)  # fmt: skip
    return len(jobs) - len([r for r in result.item_results if r.output is not None])


async def bare_langgraph(agent, jobs, concurrency: int) -> int:
    """The same compiled graph (same chat model) without our runner or adapter: what a
    team's own script does, ainvoke under a semaphore, nothing read from the result."""
    from langchain_core.messages import HumanMessage

    graph, semaphore = agent.graph, asyncio.Semaphore(concurrency)
    config = {"recursion_limit": agent.options.recursion_limit}

    async def one(case) -> int:
        async with semaphore:
            try:
                await graph.ainvoke(
                    {"messages": [HumanMessage(case.input["customer_utterance"])]}, config
                )
            except Exception:
                return 1
            return 0

    return sum(await asyncio.gather(*(one(case) for case, _ in jobs)))


async def sequential(agent, jobs, concurrency: int) -> int:
    errors = 0
    for case, repeat in jobs:
        try:
            await agent.run(case, repeat=repeat)
        except Exception:
            errors += 1
    return errors


RUNNERS = {"ours": ours, "bare LangGraph": bare_langgraph,
           "langfuse run_experiment": langfuse_runner, "sequential": sequential}  # fmt: skip


def shard_process(shard, repeats: int, base_url: str, ready, go, results) -> None:
    """One shard in its own (forked) process: build the agent, warm up on one item, wait
    for the start, run the shard's items, report (errors, CPU seconds)."""
    suite, prompt, settings = drive_thru(base_url)
    cases = suite.load_cases()
    agent = suite.make_agent(prompt, settings)
    run_sync(run_agent(agent, cases[:1], RunnerConfig(concurrency=1)))
    ready.set()
    go.wait()
    cpu = time.process_time()
    config = RunnerConfig(concurrency=shard.concurrency, repeats=repeats)
    jobs = shard.select(jobs_of(cases, repeats))
    outputs = run_sync(run_agent(agent, cases, config, jobs=jobs))
    results.put((sum(1 for o in outputs if o.error), time.process_time() - cpu))


def measure_sharded(
    server: ModelServer, count: int, concurrency: int, n_cases: int, repeats: int
) -> Row:
    """A run split into ``count`` shards, each in a process of its own (see the docstring)."""
    context = forked_from("__main__")
    shards = split(count, n_cases * repeats, concurrency, None)
    go, results = context.Event(), context.Queue()
    readies = [context.Event() for _ in shards]
    processes = [context.Process(target=shard_process,
                                 args=(s, repeats, server.base_url, ready, go, results))
                 for s, ready in zip(shards, readies, strict=True)]  # fmt: skip
    for process in processes:
        process.start()
    for ready in readies:
        if not ready.wait(timeout=120):
            raise RuntimeError("a shard process did not start")
    calls, server_cpu = server.calls(), server.cpu_s()
    start = time.perf_counter()
    go.set()
    reported = [results.get(timeout=600) for _ in shards]
    wall = time.perf_counter() - start
    for process in processes:
        process.join(timeout=30)
    return Row(f"ours, {count} shards", concurrency, n_cases * repeats,
               server.calls() - calls, wall, sum(cpu for _, cpu in reported),
               server.cpu_s() - server_cpu, sum(e for e, _ in reported))  # fmt: skip


def drive_thru(base_url: str):
    """The benchmark's suite, its production prompt and model settings on ``base_url``."""
    suite = load_project(EXAMPLES / "eval-pipeline.yaml").suite("drive_thru")
    prompt = LocalPromptRegistry(EXAMPLES / "prompts").get_by_label(suite.prompt_name, "production")
    # Under --rate-limit most calls meet a 429 first: the client (the one layer that
    # retries model calls) waits out Retry-After as often as it takes.
    settings = LLMSettings.create(base_url=base_url, api_key="benchmark", model="offline",
                                  max_retries=20)  # fmt: skip
    return suite, prompt, settings.with_prompt_config(prompt.config)


def run_benchmark(
    *,
    latency_ms: float,
    items: int,
    concurrency: list[int],
    reps: int = 3,
    rate_limit: float | None = None,
    shards: int = 2,
    scaling: tuple[int, ...] = (),
    sequential_items: int = 100,
    profile: bool = False,
    plot: Path | None = None,
    runners: tuple[str, ...] = ("ours", "bare LangGraph", "langfuse run_experiment"),
    out=print,
) -> list[Row]:
    server = ModelServer(latency_ms, rate_limit)
    suite, prompt, settings = drive_thru(server.base_url)
    cases = suite.load_cases()
    repeats = math.ceil(items / len(cases))
    jobs = [(c, r) for r in range(repeats) for c in cases]
    rows: list[Row] = []
    scaling_rows: list[Row] = []
    try:

        def make_agent():
            return suite.make_agent(prompt, settings)

        measure(server, "ours", jobs[: len(cases)], make_agent, 8)  # warm-up: imports
        sharded = f"ours, {shards} shards"
        paired: dict[str, list[Row]] = {}  # the top C's repetitions, for ours − bare
        for c in concurrency:
            runs: dict[str, list[Row]] = {runner: [] for runner in (*runners, sharded)}
            for _ in range(reps if c > 1 else 1):  # alternate: all see the same noise
                for runner in runners:
                    runs[runner].append(measure(server, runner, jobs, make_agent, c))
                if shards > 1 and c >= shards:
                    runs[sharded].append(measure_sharded(server, shards, c, len(cases), repeats))
            rows += [median_of(found) for found in runs.values() if found]
            if c == max(concurrency):
                paired = runs
        top = max(concurrency)
        for _ in range(reps if scaling else 0):  # shard counts alternate too
            for count in scaling:
                scaling_rows.append(measure_sharded(server, count, top, len(cases), repeats))
        seq_jobs = jobs[:sequential_items]
        rows.append(measure(server, "sequential", seq_jobs, make_agent, 1))
        calls = {} if rate_limit else item_calls(make_agent(), cases, repeats, max(concurrency))
        layers = []  # a CPU measurement: not under a rate limit, where calls get 429s
        if not rate_limit:
            system_prompt = prompt.compile(menu=load_menu().describe())
            layers = cpu_by_layer(server, system_prompt, 20 * max(concurrency), max(concurrency))
        if profile:
            out(profile_ours(make_agent(), jobs, max(concurrency)))
    finally:
        server.close()
    k = sum(r.calls for r in rows) / sum(r.items for r in rows)

    def limit_at(concurrency: int) -> float:
        limit = concurrency / (k * latency_ms / 1000)
        return min(limit, rate_limit / k) if rate_limit else limit

    found = ceilings(rows, calls, cases, repeats, latency_ms / 1000, shards) if calls else []
    if plot:
        out(f"picture: {plot_rows(rows, limit_at, found, plot)}")

    out(f"drive_thru full × {repeats} repeats = {len(jobs)} items; L = {latency_ms:g} ms; "
        f"k = {k:.2f} model calls per item"
        + (f"; rate limit {rate_limit:g} calls/s" if rate_limit else ""))  # fmt: skip
    out("")
    out(
        "| runner | C | items | wall s | items/s | calls/s | limit items/s | % of limit "
        "| items/s range | client CPU ms/call | server CPU ms/call | errors |"
    )
    out("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        limit = limit_at(r.concurrency)
        out(f"| {r.runner} | {r.concurrency} | {r.items} | {r.wall_s:.1f} | "
            f"{r.items_per_s():.1f} | {r.calls / r.wall_s:.1f} | {limit:.1f} | "
            f"{100 * r.items_per_s() / limit:.0f}% | {spread(r)} | "
            f"{1000 * r.cpu_s / max(r.calls, 1):.2f} | "
            f"{1000 * r.server_cpu_s / max(r.calls, 1):.2f} | {r.errors} |")  # fmt: skip
    top = max(concurrency)
    if scaling_rows:
        out("")
        out(
            f"Scaling: items/s against the shard count at C = {top} in all "
            f"(limit {limit_at(top):.1f} items/s; median of {reps}, range beside it):"
        )
        out("")
        out("| shards | C per shard | items/s | % of limit | items/s range | client CPU ms/call |")
        out("|---:|---:|---:|---:|---:|---:|")
        for count in scaling:
            r = median_of([row for row in scaling_rows if row.runner == f"ours, {count} shards"])
            out(f"| {count} | {top / count:g} | {r.items_per_s():.1f} | "
                f"{100 * r.items_per_s() / limit_at(top):.0f}% | {spread(r)} | "
                f"{1000 * r.cpu_s / max(r.calls, 1):.2f} |")  # fmt: skip
    ceiling_table(found, calls, out)
    if layers:
        layer_table(layers, top, latency_ms, out)
        own_cpu_table(layers, paired, top, out)
    return rows


def cpu_ms(row: Row) -> float:
    return 1000 * row.cpu_s / max(row.calls, 1)


def own_cpu_table(layers, runs: dict[str, list[Row]], top: int, out) -> None:
    """Our own CPU per model call at the top C: ours − bare LangGraph, repetition by
    repetition (the two alternate), the median and range of the differences."""
    ours, bare = runs.get("ours") or [], runs.get("bare LangGraph") or []
    if not ours or not bare:
        return
    diffs = sorted(cpu_ms(o) - cpu_ms(b) for o, b in zip(ours, bare, strict=True))
    out("")
    out(f"Client CPU per model call at C = {top}, ours against the same graph without our "
        f"runner (median of {len(diffs)} alternated repetitions, range beside it):")  # fmt: skip
    out("")
    out("| client | CPU ms/call | range |")
    out("|---|---:|---:|")
    for name, cpu, _ in layers:
        if name.startswith(("raw HTTP", "+ LangChain")):
            out(f"| {name} | {cpu:.2f} | |")
    for name, found in (("bare LangGraph", bare), ("ours", ours)):
        values = [cpu_ms(r) for r in found]
        out(f"| {name} | {statistics.median(values):.2f} | "
            f"{min(values):.2f}–{max(values):.2f} |")  # fmt: skip
    out(f"| ours − bare LangGraph | {statistics.median(diffs):.2f} | "
        f"{diffs[0]:.2f}–{diffs[-1]:.2f} |")  # fmt: skip


def layer_table(layers, top: int, latency_ms: float, out) -> None:
    out("")
    out(
        f"Client CPU per model call by layer (C = {top}; the agent rows above add LangGraph, "
        f"the tools and the runner). The limit is C / L = {top / latency_ms * 1000:.0f} "
        "calls/s; what raw HTTP reaches is the most this machine and server allow any client:"
    )
    out("")
    out("| layer | client CPU ms/call | calls/s | % of limit |")
    out("|---|---:|---:|---:|")
    for name, cpu, rate in layers:
        out(f"| {name} | {cpu:.2f} | {rate:.0f} | {100 * rate * latency_ms / 1000 / top:.0f}% |")


def item_calls(agent, cases, repeats: int, concurrency: int) -> dict[tuple[str, int], int]:
    """How many model calls each item makes (the offline model answers each item the same
    way every time), from one more run of ours."""
    outputs = run_sync(run_agent(agent, cases, RunnerConfig(concurrency=concurrency,
                                                            repeats=repeats)))  # fmt: skip
    return {(o.item_id, o.repeat): sum(u["calls"] for u in o.usage.values()) for o in outputs}


def schedule_bound(calls: dict[tuple[str, int], int], jobs: list, shards: list,
                   latency_s: float) -> float:  # fmt: skip
    """The share of the limit a run reaches with no overhead at all: every item takes its
    calls × L, each shard starts its items in order as slots free up (run_agent does) and
    the run ends with its last item. The limit assumes every slot busy to the end."""
    ends = []
    for shard in shards:
        slots = [0.0] * shard.concurrency
        for case, repeat in shard.select(jobs):
            heapq.heappush(slots, heapq.heappop(slots) + calls[case.id, repeat] * latency_s)
        ends.append(max(slots))
    total_concurrency = sum(shard.concurrency for shard in shards)
    return sum(calls.values()) * latency_s / total_concurrency / max(ends)


@dataclass
class Ceiling:
    """The most a run of this agent can reach, however cheap the runner (as shares of the
    limit): the schedule bound times the model's share of an item's time when items run one
    at a time (the sequential row: the agent's own CPU and the server's lie on every
    item's path)."""

    runner: str
    concurrency: int
    schedule_bound: float
    agent_share: float
    agent_ms_per_item: float  # the agent's and the server's own work, items run one at a time
    measured: float

    @property
    def share(self) -> float:
        return self.schedule_bound * self.agent_share


def ceilings(rows: list[Row], calls, cases, repeats: int, latency_s: float,
             shards: int) -> list[Ceiling]:  # fmt: skip
    """The ceiling of every row of ours (none without a sequential row to measure the
    agent alone)."""
    (sequential,) = [r for r in rows if r.runner == "sequential"]
    if not sequential.items:
        return []
    agent_share = sequential.calls * latency_s / sequential.wall_s
    agent_ms = 1000 * (sequential.wall_s - sequential.calls * latency_s) / sequential.items
    jobs = jobs_of(cases, repeats)
    found = []
    for r in rows:
        count = 1 if r.runner == "ours" else shards if r.runner.startswith("ours, ") else 0
        if count:
            bound = schedule_bound(calls, jobs, split(count, len(jobs), r.concurrency, None),
                                   latency_s)  # fmt: skip
            measured = r.calls * latency_s / r.concurrency / r.wall_s
            found.append(Ceiling(r.runner, r.concurrency, bound, agent_share, agent_ms, measured))
    return found


def ceiling_table(found: list[Ceiling], calls, out) -> None:
    if not found:
        return
    own_ms = found[0].agent_ms_per_item
    out("")
    out(f"Ceiling: the most a run of this agent can reach, however cheap the runner. Schedule "
        f"bound: items of 1–{max(calls.values())} calls leave slots idle at the end; agent "
        f"alone: run one at a time, {100 * found[0].agent_share:.1f}% of an item's time is "
        f"the model's ({own_ms:.0f} ms per item is the agent's and the server's own "
        "work):")  # fmt: skip
    out("")
    out("| runner | C | schedule bound | ceiling (× agent alone) | measured | below the ceiling |")
    out("|---|---:|---:|---:|---:|---:|")
    for c in found:
        out(f"| {c.runner} | {c.concurrency} | {100 * c.schedule_bound:.1f}% | "
            f"{100 * c.share:.1f}% | {100 * c.measured:.0f}% | "
            f"{100 * (c.share - c.measured):.0f} pt |")  # fmt: skip


def spread(row: Row) -> str:
    low, high = row.spread
    return f"{low:.1f}–{high:.1f}" if high > low else ""


def plot_rows(rows: list[Row], limit_at, found: list[Ceiling], path: Path) -> Path:
    """Items/s against concurrency for both runners, with the limit, the ceiling of this
    agent (one process's) and each median's range."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = sorted({r.concurrency for r in rows if r.runner != "sequential"})
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=90)
    ax.plot(levels, [limit_at(c) for c in levels], "k--", linewidth=1, label="limit C / (k·L)")
    if ours := sorted((c for c in found if c.runner == "ours"), key=lambda c: c.concurrency):
        ax.plot([c.concurrency for c in ours], [limit_at(c.concurrency) * c.share for c in ours],
                ":", color="grey", linewidth=1.2,
                label="ceiling of this agent (schedule × agent alone)")  # fmt: skip
    colours = {"ours": "#1f5fa8", "langfuse run_experiment": "#e67e22"}
    colours |= {r.runner: "#2e8b57" for r in rows if r.runner.startswith("ours, ")}
    for runner, colour in colours.items():
        mine = sorted((r for r in rows if r.runner == runner), key=lambda r: r.concurrency)
        rates = [r.items_per_s() for r in mine]
        low = [rate - (r.spread[0] or rate) for r, rate in zip(mine, rates, strict=True)]
        high = [(r.spread[1] or rate) - rate for r, rate in zip(mine, rates, strict=True)]
        ax.errorbar([r.concurrency for r in mine], rates, yerr=[low, high], fmt="o-",
                    capsize=3, color=colour, label=runner)  # fmt: skip
        if runner.startswith("ours"):
            below = -12 if runner == "ours" else 6  # the sharded labels above the points
            for r, rate in zip(mine, rates, strict=True):
                ax.annotate(f"{100 * rate / limit_at(r.concurrency):.0f}%", (r.concurrency, rate),
                            xytext=(6, below), textcoords="offset points", fontsize=8,
                            color=colour)  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xticks(levels, [str(c) for c in levels])
    ax.set_xlabel("concurrency C (items in flight)")
    ax.set_ylabel("items/s")
    ax.set_title("Throughput against the limit (labels: ours as % of the limit)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def cpu_by_layer(server: ModelServer, system_prompt: str, calls: int, concurrency: int):
    """Client CPU per model call, one layer at a time: the same first request of a drive-thru
    item sent by raw HTTP, by the OpenAI SDK, and by LangChain's ChatOpenAI."""
    import openai
    from eval_examples.drive_thru.tools import TOOLS
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from eval_pipeline.llm.factory import create_chat_model

    utterance = "I'll have an Egg McMuffin"
    messages = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": utterance},
    ]
    tools = [convert_to_openai_tool(t) for t in TOOLS]

    def raw_http():
        client = openai.DefaultAsyncHttpxClient()
        body = {"model": "offline", "messages": messages, "tools": tools}

        async def call():
            (await client.post(f"{server.base_url}/chat/completions", json=body)).json()

        return call

    def openai_sdk():
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="benchmark",
                                    http_client=openai.DefaultAsyncHttpxClient())  # fmt: skip

        async def call():
            await client.chat.completions.create(model="offline", messages=messages, tools=tools)

        return call

    def langchain():
        settings = LLMSettings.create(base_url=server.base_url, api_key="benchmark")
        llm = create_chat_model(settings).bind_tools(TOOLS)
        lc_messages = [SystemMessage(system_prompt), HumanMessage(utterance)]

        async def call():
            await llm.ainvoke(lc_messages, seed=1)

        return call

    async def drive(call) -> None:
        semaphore = asyncio.Semaphore(concurrency)

        async def one():
            async with semaphore:
                await call()

        await asyncio.gather(*(one() for _ in range(calls)))

    rows = []
    for name, make in (("raw HTTP (httpx2)", raw_http), ("+ OpenAI SDK", openai_sdk),
                       ("+ LangChain ChatOpenAI", langchain)):  # fmt: skip
        call = make()
        cpu, start = time.process_time(), time.perf_counter()
        run_sync(drive(call))
        rows.append((name, 1000 * (time.process_time() - cpu) / calls,
                     calls / (time.perf_counter() - start)))  # fmt: skip
    return rows


def profile_ours(agent, jobs, concurrency: int) -> str:
    """Where the client's CPU goes at the highest concurrency: top functions by own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(ours(agent, jobs, concurrency))
    profiler.disable()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("tottime").print_stats(25)
    return text.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--items", type=int, default=500, help="at least this many items")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--reps", type=int, default=3, help="repetitions at each C > 1")
    parser.add_argument("--shards", type=int, default=2,
                        help="the sharded row's shard count (1: no sharded row)")  # fmt: skip
    parser.add_argument("--scaling", type=int, nargs="*", default=[],
                        help="shard counts for a scaling table at the top C: 1 2 4")  # fmt: skip
    parser.add_argument("--rate-limit", type=float, default=None, help="model calls per second")
    parser.add_argument("--sequential-items", type=int, default=100)
    parser.add_argument("--profile", action="store_true", help="cProfile ours at the top C")
    parser.add_argument("--plot", type=Path, default=None, help="draw items/s against C here")
    compared = list(RUNNERS)[:3]
    parser.add_argument("--runners", nargs="+", default=compared, choices=compared,
                        help="the runners compared at every C (ours always)")  # fmt: skip
    args = parser.parse_args()
    run_benchmark(latency_ms=args.latency_ms, items=args.items, concurrency=args.concurrency,
                  reps=args.reps, rate_limit=args.rate_limit, profile=args.profile,
                  shards=args.shards, scaling=tuple(args.scaling),
                  sequential_items=args.sequential_items, plot=args.plot,
                  runners=("ours", *(r for r in args.runners if r != "ours")))  # fmt: skip


if __name__ == "__main__":
    main()
