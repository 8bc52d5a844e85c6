"""One large run through Dagster in shards: completeness and peak memory per process.

    .venv/bin/python benchmarks/shards.py [--items 20000] [--shards 4] [--concurrency 64]

eval_job runs as a real Dagster run (execute_job on an instance on disk, the multiprocess
executor: every step a process of its own, as `dagster dev` or a run worker runs it) on
drive_thru's full tier repeated to at least --items items, the offline model in each shard
process, the results store in SQLite (the shards write to it at once). A sampler reads
every descendant process's peak resident memory (VmHWM) twice a second; the Dagster event
log says which step each process ran. The run must end with one complete run, one
summary, and exactly one output per (case, repeat).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"  # the example suites' project
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(EXAMPLES))


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class PeakSampler(threading.Thread):
    """The highest VmHWM seen for this process and every descendant, by pid."""

    def __init__(self, interval_s: float = 0.5):
        super().__init__(daemon=True)
        self.interval_s, self.peaks, self.stopped = interval_s, {}, threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while not self.stopped.is_set():
            for pid in {me, *descendants(me)}:
                value = peak_rss_mb(pid)
                if value is not None:
                    self.peaks[pid] = max(self.peaks.get(pid, 0.0), value)
            self.stopped.wait(self.interval_s)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="eval-shards-"))
    (work / "dagster").mkdir()
    os.environ.update({
        "DAGSTER_HOME": str(work / "dagster"),
        "EVAL_HOME": str(work / "home"),
        "EVAL_RESULTS_URL": f"sqlite:///{work / 'results.sqlite'}",
        "EVAL_PROJECT": str(EXAMPLES / "eval-pipeline.yaml"),
    })  # fmt: skip
    for key in ("EVAL_LLM_BASE_URL", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "EVAL_EXECUTOR"):
        os.environ.pop(key, None)

    from dagster import DagsterEventType, DagsterInstance, execute_job, reconstructable

    from eval_pipeline.core.store.results_store import ResultsStore
    from eval_pipeline.defs.evaluation.execution import execution_config
    from eval_pipeline.defs.partitions import EvalPartition, add_partitions
    from eval_pipeline_tests import crash_target
    from eval_pipeline_tests.helpers import suite

    cases = suite("drive_thru").load_cases()
    repeats = math.ceil(args.items / len(cases))
    config = {"tier": "full", "repeats": repeats, "concurrency": args.concurrency,
              "shards": args.shards}  # fmt: skip
    # every shard a process, all at once: what the sensor and the schedule ask for
    run_config = {"ops": {"agent_run_outputs": {"config": config}},
                  **execution_config(args.shards)}  # fmt: skip
    sampler = PeakSampler()
    sampler.start()
    started = time.perf_counter()
    with DagsterInstance.get() as instance:
        add_partitions(instance, [EvalPartition("drive_thru", "v1")])
        result = execute_job(reconstructable(crash_target.eval_job), instance,
                             run_config=run_config,
                             tags=crash_target.partition_tags("drive_thru", "v1"))  # fmt: skip
        wall = time.perf_counter() - started
        sampler.stopped.set()
        sampler.join()
        steps: dict[str, tuple[int, float]] = {}  # step → (pid, seconds)
        starts = {}
        for record in instance.all_logs(result.run_id):
            event = record.dagster_event
            if event is None or event.step_key is None:
                continue
            if event.event_type == DagsterEventType.STEP_START:
                starts[event.step_key] = (event.pid, record.timestamp)
            elif event.event_type in (DagsterEventType.STEP_SUCCESS,
                                      DagsterEventType.STEP_FAILURE):  # fmt: skip
                pid, begun = starts[event.step_key]
                steps[event.step_key] = (pid, record.timestamp - begun)
    store = ResultsStore(os.environ["EVAL_RESULTS_URL"])
    runs = store.list_runs()
    outputs = store.read_outputs(runs[0].run_id) if runs else []
    keys = {(o.item_id, o.repeat) for o in outputs}
    wanted = {(c.id, r) for c in cases for r in range(repeats)}
    summary = store.read_summary(runs[0].run_id) if runs else None

    outcome = "SUCCESS" if result.success else "FAILED"
    print(f"eval_job, drive_thru full × {repeats} repeats = {len(wanted)} items, "
          f"{args.shards} shards, concurrency {args.concurrency} in all, offline model, "
          f"SQLite results store; {wall:.0f} s wall, run {outcome}")  # fmt: skip
    print("")
    print(f"runs in the store: {len(runs)} ({', '.join(r.status for r in runs)}); summaries: "
          f"{1 if summary else 0} (n_items {summary.n_items if summary else '-'}); outputs: "
          f"{len(outputs)}, distinct {len(keys)}, missing {len(wanted - keys)}, "
          f"not in the run {len(keys - wanted)}")  # fmt: skip
    print("")
    print("| step | process | seconds | peak RSS MiB |")
    print("|---|---:|---:|---:|")
    for step, (pid, seconds) in sorted(steps.items(), key=lambda s: s[1][0]):
        peak = sampler.peaks.get(pid)
        print(f"| {step} | {pid} | {seconds:.1f} | {peak:.0f} |" if peak else
              f"| {step} | {pid} | {seconds:.1f} | (not sampled) |")  # fmt: skip
    print(
        f"| (the launching process) | {os.getpid()} | {wall:.1f} | "
        f"{sampler.peaks.get(os.getpid(), 0):.0f} |"
    )
    print("")
    print(f"peak RSS of any process: {max(sampler.peaks.values()):.0f} MiB")


if __name__ == "__main__":
    main()
