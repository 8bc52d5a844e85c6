"""A run worker to kill: executes eval_job for one partition as a real Dagster run.

    python -m eval_pipeline_tests.crash_target SUITE VERSION

Settings come from the environment (DAGSTER_HOME, EVAL_RESULTS_URL, EVAL_LLM_BASE_URL, …),
as in a deployment; the test kills this process group with SIGKILL half-way.
"""

from __future__ import annotations

import sys

from dagster import DagsterInstance, MultiPartitionKey, execute_job, reconstructable

from eval_pipeline.definitions import defs

RUN_CONFIG = {"ops": {"agent_run_outputs": {"config": {"tier": "full", "concurrency": 2}}}}


def eval_job():
    return defs.resolve_job_def("eval_job")


def partition_tags(suite: str, version: str) -> dict[str, str]:
    key = MultiPartitionKey({"suite": suite, "prompt_version": version})
    return eval_job().partitions_def.get_tags_for_partition_key(key)


if __name__ == "__main__":
    suite, version = sys.argv[1:3]
    with DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("prompt_version", [version])
        result = execute_job(reconstructable(eval_job), instance, run_config=RUN_CONFIG,
                             tags=partition_tags(suite, version))  # fmt: skip
        sys.exit(0 if result.success else 1)
