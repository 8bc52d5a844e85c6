"""The project file: suites declared by name, resolved into ``core.suite.Suite`` values."""

from eval_pipeline.agents.project.loader import Project, find_project, load_project
from eval_pipeline.agents.project_errors import AgentBuildError, ProjectError
from eval_pipeline.agents.targets import import_target

__all__ = [
    "AgentBuildError",
    "Project",
    "ProjectError",
    "find_project",
    "import_target",
    "load_project",
]
