"""The project file: suites declared by name, resolved into ``core.suite.Suite`` values."""

from eval_pipeline.agents.project.loader import (
    AgentBuildError,
    Project,
    ProjectError,
    find_project,
    import_target,
    load_project,
)

__all__ = [
    "AgentBuildError",
    "Project",
    "ProjectError",
    "find_project",
    "import_target",
    "load_project",
]
