"""One evaluation through either driver of the run service: in this process (the CLI's
and ``evaluate()``'s) or Dagster's assets. A test parametrized over ``DRIVERS`` checks a
feature once, the way each driver runs it (eval_pipeline/service)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagster import instance_for_test, materialize

from eval_pipeline.core.evaluation import EvalResult
from eval_pipeline.core.store.results_store import ResultsStore
from eval_pipeline.defs.evaluation.assets import build_evaluation_assets
from eval_pipeline.defs.partitions import EvalPartition, add_partitions, build_partitions
from eval_pipeline_tests.helpers import SUITE_NAMES, eval_resources

DRIVERS = ("in_process", "dagster")


@dataclass
class Driven:
    """What a driver's run left: the run's verdict read back from the store, and, from
    Dagster, the checks it showed (name → evaluation)."""

    verdict: str
    run_id: str
    store: ResultsStore
    checks: dict[str, Any]
    summary_metadata: dict[str, Any]


def drive(driver: str, tmp_path: Path, project: Path, suite: str, version: int, *,
          resources: dict[str, Any] | None = None, **options: Any) -> Driven:  # fmt: skip
    """Evaluate ``suite`` at prompt ``version`` with ``options`` (RunOptions fields)
    through ``driver``; the results store is ``tmp_path/results.sqlite`` (the CLI's under
    ``clean_cli_env(monkeypatch, tmp_path, project)``, and Dagster's ``eval_resources``)."""
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
    if driver == "in_process":
        from eval_pipeline import evaluate

        result: EvalResult = evaluate(suite, project=project, prompt_version=version, **options)
        return Driven(result.verdict, result.run.run_id, store, {}, {})
    assets = build_evaluation_assets(build_partitions(SUITE_NAMES))
    resources = resources or eval_resources(tmp_path, project=project)
    home = tmp_path / "dagster"
    home.mkdir(exist_ok=True)
    with instance_for_test(temp_dir=str(home)) as instance:
        partition = EvalPartition(suite, f"v{version}")
        add_partitions(instance, [partition])
        done = materialize(
            [assets.golden_dataset, *assets.evaluation], selection=assets.evaluation,
            partition_key=partition.key,
            instance=instance, resources=resources, raise_on_error=False,
            run_config={"ops": {"agent_run_outputs": {"config": options}}},
        )  # fmt: skip
    summary = next(e for e in done.get_asset_materialization_events()
                   if e.asset_key.path == ["eval_summary"]).materialization.metadata  # fmt: skip
    return Driven(summary["verdict"].value, summary["run_id"].value, store,
                  {e.check_name: e for e in done.get_asset_check_evaluations()},
                  dict(summary))  # fmt: skip
