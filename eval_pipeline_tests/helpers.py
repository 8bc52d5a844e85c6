"""Shared test set-up: the examples' project (examples/eval-pipeline.yaml), Dagster
resources on temporary storage, sensor ticks, the eval job."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from dagster import SensorResult, build_sensor_context

from eval_pipeline.agents.project import Project, load_project
from eval_pipeline.core.prompts.labels import PromptVersion
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.defs import build_definitions
from eval_pipeline.defs.partitions import unplotted
from eval_pipeline.defs.resources import (
    LangfuseResource,
    LLMResource,
    ResultsStoreResource,
    ServicesResource,
    SuitesResource,
)
from eval_pipeline.integrations.prompt_registry import LocalPromptRegistry
from eval_pipeline.llm.model_settings import LLMSettings
from eval_pipeline.settings import copy_examples_project

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PROJECT = EXAMPLES / "eval-pipeline.yaml"
SUITE_NAMES = tuple(yaml.safe_load(PROJECT.read_text())["suites"])  # in the file's order


def benchmark(name: str) -> Any:
    """benchmarks/NAME.py as a module (its simulations are what some tests run, on fewer
    runs), loaded once."""
    return load_module(ROOT / "benchmarks" / f"{name}.py")


def load_module(path: Path) -> Any:
    """A script of this repository (benchmarks/, scripts/) as a module, loaded once."""
    name = path.stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # (its dataclasses look their module up)
        spec.loader.exec_module(module)
    return sys.modules[name]


@cache
def repo_project() -> Project:
    return load_project(PROJECT)


def suite(name: str) -> Suite:
    """A suite of this repository's project file."""
    return repo_project().suite(name)


def suite_at(name: str, datasets: Path) -> Suite:
    """A suite of this repository with its dataset directory at ``datasets / name``."""
    return dataclasses.replace(suite(name), dataset_dir=datasets / name)


def prompt(suite_: Suite, version: int | None = None) -> PromptVersion:
    """A shipped prompt version of the suite (default: the one labelled production)."""
    registry = LocalPromptRegistry(EXAMPLES / "prompts")
    assert suite_.prompt_name is not None
    if version is None:
        return registry.get_by_label(suite_.prompt_name, "production")
    return registry.get(suite_.prompt_name, version)


def production_prompt(suite_: Suite) -> PromptVersion:
    return prompt(suite_)


def agent(name: str, version: int | None = None, settings: LLMSettings | None = None) -> Any:
    """The suite's agent for one run, on the offline model unless ``settings`` say otherwise."""
    chosen = suite(name)
    version_ = prompt(chosen, version)
    llm = (settings or LLMSettings.create()).with_prompt_config(version_.config)
    return chosen.make_agent(version_, llm)


def copy_project(tmp_path: Path) -> Path:
    """The examples' project file, datasets, prompts and code, copied: tests edit the copy."""
    return copy_examples_project(tmp_path / "project")


def eval_resources(
    tmp_path: Path, *, project: Path = PROJECT, langfuse: LangfuseResource | None = None
) -> dict[str, Any]:
    """The evaluation resources with the results store in ``tmp_path``."""
    langfuse = langfuse or LangfuseResource()
    suites = SuitesResource(project=str(project))
    return {
        "results_store": ResultsStoreResource(url=f"sqlite:///{tmp_path / 'results.sqlite'}"),
        "suites": suites,
        "services": ServicesResource(suites=suites, langfuse=langfuse),
        "llm": LLMResource(),
        "langfuse": langfuse,
    }


def definitions(resources: dict[str, Any], project: Path = PROJECT):
    return build_definitions(project, resources=resources)


def sensor_tick(instance, resources, cursor=None, project: Path = PROJECT):
    """One prompt_label_sensor tick: (result, the context's cursor afterwards). Applies the
    dynamic-partition requests, which build_sensor_context does not do."""
    sensor = definitions(resources, project).resolve_sensor_def("prompt_label_sensor")
    with build_sensor_context(instance=instance, cursor=cursor, resources=resources) as context:
        result = sensor(context)
        kept = context.cursor
    if isinstance(result, SensorResult):
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
    return result, kept


def eval_job(resources: dict[str, Any], project: Path = PROJECT):
    """eval_job bound to these resources, as the daemon would launch it."""
    return definitions(resources, project).resolve_job_def("eval_job")


CONFIG_ENV = ("EVAL_LLM_BASE_URL", "EVAL_LLM_API_KEY", "OPENAI_API_KEY", "EVAL_RESULTS_URL",
              "EVAL_LLM_TEMPERATURE", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY",
              "LANGFUSE_BASE_URL", "EVAL_LLM_MODEL", "EVAL_LLM_CHECK_MODEL", "EVAL_PROJECT",
              "EVAL_PROMPTS_DIR")  # fmt: skip


def clean_cli_env(monkeypatch, home: Path, project: Path = PROJECT) -> Path:
    """The CLI on embedded defaults with its EVAL_HOME (and DAGSTER_HOME) under ``home``,
    on ``project`` (default: this repository's)."""
    for var in CONFIG_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EVAL_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    monkeypatch.setenv("EVAL_PROJECT", str(project))
    return home


@contextmanager
def in_team_project(tmp_path: Path, monkeypatch, project: Path, package: str) -> Iterator[Path]:
    """The CLI run from a team's ``project`` (written under ``tmp_path``, outside this
    repository), on embedded defaults; its agent ``package`` unloaded afterwards, so the
    next test imports its own."""
    clean_cli_env(monkeypatch, tmp_path / "home", project)
    monkeypatch.delenv("EVAL_PROJECT")
    monkeypatch.chdir(project.parent)
    try:
        yield project.parent
    finally:
        for name in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
            del sys.modules[name]


def write_team_project(root: Path, name: str, agent: str, cases: list[dict[str, Any]],
                       thresholds: dict[str, Any], versions: dict[int, str]) -> Path:  # fmt: skip
    """A team's project in a directory of its own: the agent package ``name`` (``agent``,
    the source of its agent.py, answering with ``answer``), a suite of that name on
    ``cases`` in evals/NAME with ``thresholds``, scored by completeness, and the text
    prompt NAME/assistant in ``versions``, version 1 labelled production."""
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "agent.py").write_text(agent)
    (root / "evals" / name).mkdir(parents=True)
    (root / "evals" / name / "cases.yaml").write_text(yaml.safe_dump(cases))
    (root / "evals" / name / "thresholds.yaml").write_text(yaml.safe_dump(thresholds))
    suite = {"agent": f"{name}.agent:answer", "dataset": f"evals/{name}",
             "prompt": f"{name}/assistant", "evaluators": ["completeness"],
             "thresholds": f"evals/{name}/thresholds.yaml"}  # fmt: skip
    project = root / "eval-pipeline.yaml"
    project.write_text(yaml.safe_dump({"prompts": "prompts", "suites": {name: suite}}))
    prompts = root / "prompts" / name / "assistant"
    prompts.mkdir(parents=True)
    for version, text in versions.items():
        body = {"type": "text", "config": {"temperature": 0.0}, "prompt": text}
        (prompts / f"v{version}.yaml").write_text(yaml.safe_dump(body))
    (root / "prompts" / "labels.yaml").write_text(f"{name}/assistant:\n  production: 1\n")
    return project


def materialized(result: Any, node: str) -> dict[str, Any]:
    """``node``'s first materialization metadata in ``result`` with its numbers under their
    own names (the pipeline keys them ``<suite>.<name>`` for Dagster's plots:
    defs/partitions.py ``plotted_per_suite``)."""
    found = result.asset_materializations_for_node(node)[0]
    key = found.partition or ""
    suite = key.split("/")[0] if "/" in key else key.split("|")[-1]
    return unplotted(suite, found.metadata)
