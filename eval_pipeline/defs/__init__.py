"""Dagster only: assets, checks, partitions, resources, jobs, sensors, schedules.

``build_definitions`` puts every suite of a project file into one set of Dagster
definitions. In a team's own repository, a one-line module is the code location:

```python
# my_project/definitions.py        (dagster dev -m my_project.definitions)
from eval_pipeline.defs import build_definitions

defs = build_definitions(__file__)  # the nearest eval-pipeline.yaml above this module
```
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dagster import Definitions


def build_definitions(
    project: str | Path | None = None, *, resources: Mapping[str, Any] | None = None
) -> Definitions:
    """The definitions of ``project``: a project file, or a module or folder inside the
    project (``build_definitions(__file__)``: the nearest eval-pipeline.yaml above it,
    whatever the layout); default: the project file found from the working directory, or
    EVAL_PROJECT. Suites become partitions; their agents are imported when a run needs
    them, so one broken suite does not stop the code location from loading. ``resources``
    replace the defaults (tests)."""
    from eval_pipeline.agents.project import find_project, load_project
    from eval_pipeline.defs import resources as defaults
    from eval_pipeline.defs.automation.definitions import build_automation
    from eval_pipeline.defs.evaluation.definitions import build_evaluation
    from eval_pipeline.defs.evaluation.execution import local_executor
    from eval_pipeline.defs.partitions import build_partitions
    from eval_pipeline.defs.storage import step_resources
    from eval_pipeline.defs.traces.definitions import build_traces

    path = find_project() if project is None else _project_file(Path(project))
    loaded = load_project(path)
    partitions = build_partitions(loaded.suite_names)
    evaluation = build_evaluation(partitions)
    # The jobs that name no executor (`dagster asset materialize`, the UI's Materialize,
    # golden_dataset_job) fork their steps as eval_job does (execution.py).
    shared = Definitions(
        resources=dict(resources or defaults.default_resources(path)) | step_resources(),
        executor=local_executor,
    )
    return Definitions.merge(
        evaluation.definitions(), build_automation(evaluation.eval_job), build_traces(partitions),
        shared,
    )


def _project_file(named: Path) -> Path:
    """A project file as named, or the nearest one above a module or folder of the project."""
    from eval_pipeline import settings
    from eval_pipeline.agents.project_errors import ProjectError

    if named.suffix in (".yaml", ".yml"):
        return named.resolve()
    found = settings.nearest_project(named if named.is_dir() else named.parent)
    if found is None:
        raise ProjectError([f"{named}: no {settings.PROJECT_FILE} in its folder or above it; "
                            "pass the project file's path to build_definitions"])  # fmt: skip
    return found
