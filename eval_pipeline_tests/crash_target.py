"""A run worker: executes eval_job for one partition as a real Dagster run, or re-executes
a failed run from failure (as the UI's "Re-execute from failure" does, parent tags included).

    python -m eval_pipeline_tests.crash_target SUITE VERSION [SHARDS]
    python -m eval_pipeline_tests.crash_target --reexecute RUN_ID

With SHARDS > 1 the run's shards run as steps in processes of their own (multiprocess).

Settings come from the environment (DAGSTER_HOME, EVAL_RESULTS_URL, EVAL_LLM_BASE_URL, …),
as in a deployment; the test kills this process group with SIGKILL half-way. A test that
imports this module gets the definitions of its own environment (``definitions``), not
those of whichever test of the process imported it first.
"""

from __future__ import annotations

import functools
import os
import sys

from dagster import (
    DagsterInstance,
    Definitions,
    ReexecutionOptions,
    execute_job,
    reconstructable,
)

from eval_pipeline import settings
from eval_pipeline.defs import build_definitions
from eval_pipeline.defs.evaluation.execution import execution_config
from eval_pipeline.defs.partitions import EvalPartition, add_partitions


def definitions() -> Definitions:
    """The code location's definitions (eval_pipeline/definitions.py's) under the current
    environment, built once per environment."""
    settings.fall_back_to_examples()
    return _built(frozenset((k, v) for k, v in os.environ.items() if k.startswith("EVAL_")))


@functools.cache
def _built(_environment: frozenset[tuple[str, str]]) -> Definitions:
    return build_definitions()


def run_config(shards: int) -> dict:
    config = {"tier": "full", "concurrency": 2, "shards": shards}
    return {"ops": {"agent_run_outputs": {"config": config}}, **execution_config(shards)}


def eval_job():
    return definitions().resolve_job_def("eval_job")


def partition_tags(suite: str, version: str) -> dict[str, str]:
    key = EvalPartition(suite, version).key
    return eval_job().partitions_def.get_tags_for_partition_key(key)


def main(args: list[str]) -> int:
    with DagsterInstance.get() as instance:
        if args[0] == "--reexecute":
            parent = instance.get_run_by_id(args[1])
            options = ReexecutionOptions.from_failure(parent.run_id, instance)
            result = execute_job(reconstructable(eval_job), instance, tags=parent.tags,
                                 reexecution_options=options)  # fmt: skip
        else:
            suite, version, shards = (*args, "1")[:3]
            add_partitions(instance, [EvalPartition(suite, version)])
            result = execute_job(reconstructable(eval_job), instance,
                                 run_config=run_config(int(shards)),
                                 tags=partition_tags(suite, version))  # fmt: skip
        return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
