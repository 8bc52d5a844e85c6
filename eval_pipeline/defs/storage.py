"""Where a run's step data goes: this machine's disk (the default), or an S3-compatible
bucket every machine reads (EVAL_S3_BUCKET), for a deployment over several machines or pods.

- Step outputs (the shard tasks, the shards' reports, the RunRef the assets pass along):
  Dagster's default IO manager pickles them under ``$DAGSTER_HOME/storage``, which a step on
  another machine cannot read. With EVAL_S3_BUCKET, dagster-aws' ``S3PickleIOManager``
  keeps them under ``s3://BUCKET/eval-pipeline/steps``.
- The summary's charts (PNG): under ``$EVAL_HOME/charts`` locally; with EVAL_S3_BUCKET,
  under ``s3://BUCKET/eval-pipeline/charts/<suite>/``. Either way they are in the
  summary's metadata too (data URIs), which lives in Dagster's event log.
- Compute logs (the steps' stdout/stderr) are the instance's: deploy/dagster-s3.yaml puts
  them in the same bucket.

The client is boto3's, configured as boto3 is: credentials from AWS_ACCESS_KEY_ID /
AWS_SECRET_ACCESS_KEY (or a role), AWS_REGION, and AWS_ENDPOINT_URL_S3 for an
S3-compatible server (MinIO, Ceph, R2…). Needs the ``s3`` extra: ``pip install
'eval-pipeline[s3]'``.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline import settings
from eval_pipeline.core.errors import ConfigurationError

if TYPE_CHECKING:
    from dagster import ConfigurableIOManager

BUCKET_VAR = "EVAL_S3_BUCKET"
PREFIX = "eval-pipeline"  # deploy/dagster-s3.yaml's compute logs go under it too
# S3's bucket naming rules (the common subset every S3-compatible server accepts)
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


@dataclass(frozen=True)
class SharedStorage:
    """An S3-compatible bucket for step outputs and charts."""

    bucket: str

    @classmethod
    def configured(cls) -> SharedStorage | None:
        """The bucket EVAL_S3_BUCKET names (checked), or None: this machine's disk."""
        bucket = os.environ.get(BUCKET_VAR, "").strip()
        if not bucket:
            return None
        if not BUCKET_NAME.fullmatch(bucket):
            raise ConfigurationError(
                f"{BUCKET_VAR}={bucket!r}: not a bucket name (3-63 lowercase letters, digits, "
                "'.' or '-'); name the bucket only, its endpoint goes in AWS_ENDPOINT_URL_S3"
            )
        return cls(bucket)

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{PREFIX}"

    def io_manager(self) -> ConfigurableIOManager:
        """Step outputs as pickles under ``<url>/steps``."""
        S3PickleIOManager, S3Resource = _dagster_aws()
        return S3PickleIOManager(s3_resource=S3Resource(), s3_bucket=self.bucket,
                                 s3_prefix=f"{PREFIX}/steps")  # fmt: skip

    def upload(self, folder: Path, under: str) -> list[str]:
        """Every file of ``folder`` to ``<url>/<under>/``; their s3:// URLs."""
        _, S3Resource = _dagster_aws()
        client = S3Resource().get_client()
        urls = []
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            key = f"{PREFIX}/{under}/{path.name}"
            client.upload_file(str(path), self.bucket, key)
            urls.append(f"s3://{self.bucket}/{key}")
        return urls


def _dagster_aws() -> tuple[type, type]:
    try:
        from dagster_aws.s3 import S3PickleIOManager, S3Resource
    except ImportError as exc:
        raise ConfigurationError(
            f"{BUCKET_VAR} needs dagster-aws: pip install 'eval-pipeline[s3]'"
        ) from exc
    return S3PickleIOManager, S3Resource


def step_resources() -> dict[str, ConfigurableIOManager]:
    """The ``io_manager`` resource when a bucket is configured; else none (Dagster's
    default, on this machine's disk). Read when the code location loads."""
    shared = SharedStorage.configured()
    return {"io_manager": shared.io_manager()} if shared else {}


@dataclass
class ChartFolder:
    """Where a run's charts are drawn, and afterwards where they were kept."""

    path: Path
    kept_at: list[str]


@contextmanager
def chart_folder(suite: str) -> Iterator[ChartFolder]:
    """``$EVAL_HOME/charts/<suite>`` on this machine; with EVAL_S3_BUCKET, a temporary
    folder whose files go to ``<url>/charts/<suite>/`` when the block ends."""
    shared = SharedStorage.configured()
    if shared is None:
        folder = settings.eval_home() / "charts" / suite
        yield ChartFolder(folder, [str(folder)])
        return
    with tempfile.TemporaryDirectory(prefix="eval-charts-") as tmp:
        drawn = ChartFolder(Path(tmp), [])
        yield drawn
        drawn.kept_at = shared.upload(Path(tmp), f"charts/{suite}")
