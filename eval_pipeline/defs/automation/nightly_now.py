"""The nightly schedule's runs, now: what `eval-pipeline nightly` queues.

The schedule's own function decides the runs (every suite's production prompt version,
full tier, fresh model calls: schedules.py), evaluated here against the deployment's
instance ($DAGSTER_HOME, which it adds the partitions to); the runs are queued through the
webserver's GraphQL API, as the Launchpad queues them, so the daemon launches them within
the queue's limits.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from urllib.parse import urlparse

from eval_pipeline.core.errors import ConfigurationError, ServiceError

SCHEDULE = "nightly_full_eval"
JOB = "eval_job"


@dataclass(frozen=True)
class Queued:
    partition: str
    run_id: str


def queue_nightly(webserver: str) -> list[Queued]:
    """Queue the runs the nightly's tick would launch now; the runs queued."""
    from dagster import DagsterInstance, RunRequest, SkipReason, build_schedule_context
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    from eval_pipeline.defs import build_definitions

    url = urlparse(webserver)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigurationError(f"--webserver {webserver!r}: expected the webserver's URL, "
                                 "e.g. http://127.0.0.1:3000")  # fmt: skip
    defs = build_definitions()
    schedule = defs.resolve_schedule_def(SCHEDULE)
    now = datetime.datetime.now(datetime.UTC)
    with (
        DagsterInstance.get() as instance,
        build_schedule_context(instance=instance, scheduled_execution_time=now,
                               resources=defs.resources) as context,
    ):  # fmt: skip
        decided = schedule(context)
    if isinstance(decided, SkipReason):
        raise ServiceError(f"{SCHEDULE} has nothing to run: {decided.skip_message}")
    if not isinstance(decided, list):  # (the schedule returns its run requests as a list)
        raise TypeError(f"{SCHEDULE} returned {type(decided).__name__}")
    requests = [r for r in decided if isinstance(r, RunRequest)]
    client = DagsterGraphQLClient(url.hostname, port_number=url.port,
                                  use_https=url.scheme == "https",
                                  path_prefix=url.path.rstrip("/"))  # fmt: skip
    queued = []
    for request in requests:
        tags = {**request.tags, "dagster/partition": request.partition_key,
                "eval/launched_by": "eval-pipeline nightly"}  # fmt: skip
        try:
            run_id = client.submit_job_execution(JOB, run_config=request.run_config, tags=tags)
        except (DagsterGraphQLClientError, OSError) as exc:
            raise ServiceError(f"the webserver at {webserver} did not queue "
                               f"{request.partition_key}: {exc}") from exc  # fmt: skip
        queued.append(Queued(str(request.partition_key), run_id))
    return queued
