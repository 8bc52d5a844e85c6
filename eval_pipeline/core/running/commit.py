"""Which commit of a team's repository a run evaluated, for the run record and the
Langfuse experiment's metadata: ``EVAL_GIT_COMMIT``, else CI's ``GITHUB_SHA``, else ``git
rev-parse HEAD`` where the agent's code is, with ``+dirty`` when that work tree has
uncommitted changes. Without git, or outside a repository, None; a variable longer than
the store keeps is refused (exit 2)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from eval_pipeline.core.errors import ConfigurationError

ENV_VARS = ("EVAL_GIT_COMMIT", "GITHUB_SHA")  # the first set wins
TIMEOUT_S = 5
MAX_LENGTH = 80  # what the results store keeps (a SHA-256 commit and "+dirty" fit)


def code_commit(where: Path) -> str | None:
    """The commit of the repository holding ``where`` (a file or a directory)."""
    for name in ENV_VARS:
        if value := os.environ.get(name, "").strip():
            if len(value) > MAX_LENGTH:  # (Postgres refused it with an unnamed DataError)
                raise ConfigurationError(
                    f"{name}={value[:20]}…: {len(value)} characters, more than the "
                    f"{MAX_LENGTH} a commit is stored with; set it to the commit's id"
                )
            return value
    directory = where if where.is_dir() else where.parent
    head = _git(directory, "rev-parse", "HEAD")
    if head is None:
        return None
    changes = _git(directory, "status", "--porcelain", "--untracked-files=no")
    return f"{head}+dirty" if changes else head


def _git(directory: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(directory), *args], capture_output=True,
                              text=True, timeout=TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
