"""Step data every machine reads: with EVAL_S3_BUCKET (and deploy/dagster-s3.yaml appended
to the instance file), a run's step outputs, charts and compute logs go to an S3-compatible
bucket, here a local moto server. Two "machines" share the Postgres instance and the
bucket, nothing else: machine A runs eval_job in two shards; machine B, with a
DAGSTER_HOME and EVAL_HOME of its own, runs collect_outputs again, which reads both
shards' outputs, written on A, from the bucket."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import boto3
import pytest
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter

from eval_pipeline_tests.helpers import ROOT
from eval_pipeline_tests.pg import dagster_pg_env, fresh_database

BIN = Path(sys.executable).parent
BUCKET = "eval-steps"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_REGION": "us-east-1"}  # fmt: skip
COLLECT = "agent_run_outputs.collect_outputs"

# Machine B: re-execute only the given steps of a run machine A made (as the UI's
# "Re-execute selected steps" does); the steps' inputs are the parent run's outputs.
REEXECUTE = textwrap.dedent("""
    import sys
    from dagster import DagsterInstance, ReexecutionOptions, execute_job, reconstructable
    from eval_pipeline_tests.crash_target import eval_job

    with DagsterInstance.get() as instance:
        parent = instance.get_run_by_id(sys.argv[1])
        options = ReexecutionOptions(parent.run_id, step_selection=sys.argv[2:])
        result = execute_job(reconstructable(eval_job), instance, tags=parent.tags,
                             reexecution_options=options)
        sys.exit(0 if result.success else 1)
""")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def s3_endpoint(tmp_path) -> Iterator[str]:
    """A local S3-compatible server (moto_server) on a free port, with an empty bucket."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "moto.log", "w") as log:
        server = subprocess.Popen([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                                  stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(f"{url}/moto-api/", timeout=2).close()
                    break
                except OSError:
                    assert server.poll() is None, (tmp_path / "moto.log").read_text()
                    assert time.monotonic() < deadline, "moto_server did not start"
                    time.sleep(0.2)
            client = boto3.client("s3", endpoint_url=url, **_boto_credentials())
            client.create_bucket(Bucket=BUCKET)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=30)


def _boto_credentials() -> dict[str, str]:
    return {"aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            "region_name": CREDENTIALS["AWS_REGION"]}  # fmt: skip


def machine(tmp_path: Path, name: str, shared: dict[str, str]) -> dict[str, str]:
    """One machine's environment: its own DAGSTER_HOME (the instance file as the runbook
    writes it) and EVAL_HOME; the Postgres instance, results store and bucket shared."""
    home = tmp_path / name / "dagster_home"
    home.mkdir(parents=True)
    instance_file = (ROOT / "deploy" / "dagster.yaml").read_text()
    instance_file += (ROOT / "deploy" / "dagster-s3.yaml").read_text()
    (home / "dagster.yaml").write_text(instance_file)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVAL_", "LANGFUSE_", "OPENAI_", "DAGSTER_", "AWS_"))}  # fmt: skip
    return env | shared | {"DAGSTER_HOME": str(home), "EVAL_HOME": str(tmp_path / name / "eval")}


def keys(client, under: str) -> list[str]:
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=under)
    return [o["Key"] for o in listed.get("Contents", [])]


@pytest.mark.postgres
def test_two_shards_outputs_go_through_the_bucket_to_a_step_on_another_machine(
    pg_server, s3_endpoint, tmp_path, monkeypatch
):
    with ExitStack() as stack:
        dagster_pg = dagster_pg_env(stack.enter_context(fresh_database(pg_server)))
        shared = {
            **dagster_pg, **CREDENTIALS,
            "EVAL_RESULTS_URL": stack.enter_context(fresh_database(pg_server)),
            "EVAL_PROJECT": str(ROOT / "examples" / "eval-pipeline.yaml"),
            "EVAL_S3_BUCKET": BUCKET,
            "AWS_ENDPOINT_URL_S3": s3_endpoint,
        }  # fmt: skip
        a, b = machine(tmp_path, "a", shared), machine(tmp_path, "b", shared)
        work = tmp_path / "elsewhere"  # outside the repository
        work.mkdir()

        ran = subprocess.run([sys.executable, "-m", "eval_pipeline_tests.crash_target",
                              "drive_thru", "v1", "2"], cwd=work, env=a, capture_output=True,
                             text=True, timeout=1500)  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-4000:]

        for key in ("DAGSTER_HOME", *dagster_pg):  # this process reads the shared instance
            monkeypatch.setenv(key, b[key])
        instance = stack.enter_context(DagsterInstance.get())
        (first,) = instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.SUCCESS]))

        client = boto3.client("s3", endpoint_url=s3_endpoint, **_boto_credentials())
        steps = keys(client, "eval-pipeline/steps/")
        shards = [k for k in steps if ".run_shard--shard_" in k]  # a run's step outputs
        assert len(shards) == 2 and all(k.endswith("/result") for k in shards), steps
        assert keys(client, "eval-pipeline/charts/drive_thru/"), "the summary's charts"
        assert keys(client, "eval-pipeline/compute-logs/"), "the steps' stdout and stderr"
        pickles_on_a = [p for p in Path(a["DAGSTER_HOME"]).rglob("*") if p.name == "result"]
        assert not pickles_on_a  # Dagster's default IO manager wrote nothing on A's disk

        again = subprocess.run([sys.executable, "-c", REEXECUTE, first.run_id, COLLECT],
                               cwd=work, env=b, capture_output=True, text=True,
                               timeout=1500)  # fmt: skip
        assert again.returncode == 0, again.stderr[-4000:]
        second = [r for r in instance.get_runs() if r.parent_run_id == first.run_id]
        assert [r.status for r in second] == [DagsterRunStatus.SUCCESS]
        loaded = instance.all_logs(second[0].run_id, of_type=DagsterEventType.LOADED_INPUT)
        assert {e.step_key for e in loaded} == {COLLECT}
        upstream = [e.dagster_event.event_specific_data.upstream_step_key or "" for e in loaded]
        # both shards' reports, from the bucket (beside them plan_shards' run reference)
        assert len([step for step in upstream if ".run_shard[" in step]) == 2, upstream
        materialization = DagsterEventType.ASSET_MATERIALIZATION
        materialized = instance.all_logs(second[0].run_id, of_type=materialization)
        (collected,) = [e.asset_materialization for e in materialized if e.step_key == COLLECT]
        assert collected is not None and collected.metadata["drive_thru.shards"].value == 2
        assert not any(Path(b["DAGSTER_HOME"]).rglob("result"))
