"""What a project file or an agent can get wrong before anything runs."""

from __future__ import annotations

from eval_pipeline.core.errors import ConfigurationError


class ProjectError(ConfigurationError):
    """The project file cannot be used; lists every problem found."""

    what = "invalid project"
    fix = "Fix the project file and run again; nothing was run."

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{self.what} ({len(problems)} problem(s)):\n{shown}\n{self.fix}")


class UnknownSuite(ProjectError):
    """``--suite`` names a suite the project file does not declare: the command's mistake."""

    what = "unknown suite"
    fix = "Name one of the project's suites with --suite (eval-pipeline suites lists them)."


class AgentBuildError(ProjectError):
    """An agent factory returned something that is not an agent."""
