"""EVAL_S3_BUCKET chooses where step outputs and charts go (defs/storage.py): unset, this
machine's disk as before; set, dagster-aws' S3 IO manager on that bucket; a bad name is
refused naming the variable."""

from __future__ import annotations

import pytest
from dagster_aws.s3 import S3PickleIOManager

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.defs.storage import chart_folder, step_resources


def test_unset_keeps_step_data_and_charts_on_this_machine(monkeypatch, tmp_path):
    monkeypatch.delenv("EVAL_S3_BUCKET", raising=False)
    monkeypatch.setenv("EVAL_HOME", str(tmp_path))
    assert step_resources() == {}  # Dagster's default IO manager, under $DAGSTER_HOME
    with chart_folder("drive_thru") as folder:
        assert folder.path == tmp_path / "charts" / "drive_thru"
    assert folder.kept_at == [str(tmp_path / "charts" / "drive_thru")]


def test_a_bucket_puts_step_outputs_in_it(monkeypatch):
    monkeypatch.setenv("EVAL_S3_BUCKET", "eval-steps")
    manager = step_resources()["io_manager"]
    assert isinstance(manager, S3PickleIOManager)
    assert (manager.s3_bucket, manager.s3_prefix) == ("eval-steps", "eval-pipeline/steps")


@pytest.mark.parametrize("value", ["s3://eval-steps", "Eval_Steps", "x"])
def test_a_bad_bucket_name_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("EVAL_S3_BUCKET", value)
    with pytest.raises(ConfigurationError, match=f"EVAL_S3_BUCKET='{value}': not a bucket"):
        step_resources()
