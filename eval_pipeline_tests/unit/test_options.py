"""RunOptions (core/options.py) is the one place a run's options and their defaults are
declared: the CLI's flags, evaluate()'s keyword arguments and Dagster's run config follow
it, and a mistake is named in the caller's words."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from eval_pipeline.api import evaluate
from eval_pipeline.cli import main
from eval_pipeline.cli.run import run
from eval_pipeline.core.options import DEFAULTS, OptionsError, RunOptions, run_options
from eval_pipeline.core.running.runner import RunnerConfig
from eval_pipeline.defs.evaluation.outputs import EvalRunConfig

FLAGS = {"tier": "tier", "repeats": "repeats", "concurrency": "concurrency",
         "timeout_s": "timeout_s", "cache": "cache", "baseline_label": "baseline_label",
         "baseline_run_id": "baseline_run_id", "margin": "margin",
         "min_primary": "min_primary", "shards": "shards"}  # fmt: skip


def test_the_cli_takes_its_defaults_and_bounds_from_the_model():
    params = {p.name: p for p in run.params}
    for field, param in FLAGS.items():
        assert params[param].default == RunOptions.model_fields[field].default, field
    assert params["concurrency"].type.max == 4096
    assert list(params["cache"].type.choices) == ["reuse", "refresh", "off"]
    refused = CliRunner().invoke(main, ["run", "--suite", "x", "--concurrency", "0"])
    assert refused.exit_code == 2 and "--concurrency" in refused.output


def test_dagster_run_config_and_the_runner_default_to_the_model():
    config = EvalRunConfig()
    for field in RunOptions.model_fields:  # every option, baseline and margin included
        if field != "shards":  # a Dagster run splits by size unless told
            assert getattr(config, field) == getattr(DEFAULTS, field), field
    assert config.request(shards=None) == RunOptions(shards=None)
    assert RunnerConfig().concurrency == DEFAULTS.concurrency
    assert RunnerConfig().timeout_s == DEFAULTS.timeout_s


def test_a_wrong_option_is_named():
    with pytest.raises(OptionsError, match=r"concurency=4: unknown option"):
        run_options(concurency=4)
    with pytest.raises(OptionsError, match=r"tier='smok'"):
        run_options(tier="smok")
    with pytest.raises(OptionsError, match=r"evaluate\(\): concurency=4: unknown option"):
        evaluate("drive_thru", concurency=4)
