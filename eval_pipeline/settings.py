"""Where things live. Every path can be overridden by an environment variable.

The project file (``eval-pipeline.yaml``) is found in the working directory or a parent,
or named by ``--project`` / ``EVAL_PROJECT``; everything a run writes by default goes to
``.eval_home`` next to it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
PROJECT_FILE = "eval-pipeline.yaml"


def project_file() -> Path | None:
    """EVAL_PROJECT (a file, or a directory holding eval-pipeline.yaml), else the nearest
    eval-pipeline.yaml in the working directory or its parents; None if there is none."""
    named = os.environ.get("EVAL_PROJECT")
    if named:
        path = Path(named).expanduser()
        return (path / PROJECT_FILE if path.is_dir() else path).resolve()
    return nearest_project(Path.cwd())


def nearest_project(start: Path) -> Path | None:
    """The eval-pipeline.yaml in ``start`` (a folder, or a file's folder) or the nearest of
    its parents; None if there is none."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).is_file():
            return folder / PROJECT_FILE
    return None


def examples_project() -> Path | None:
    """The examples' project file of a source checkout (examples/eval-pipeline.yaml beside
    the package); None when the package was installed without them."""
    found = PACKAGE_ROOT.parent / "examples" / PROJECT_FILE
    return found if found.is_file() else None


EXAMPLES_PARTS = ("datasets", "prompts", "eval_examples")


def copy_examples_project(into: Path, examples: Path | None = None) -> Path:
    """A copy of the examples' project (its file, datasets, prompts and code, without
    caches or a store) in ``into``, to edit or run apart from the checkout: tests, the
    benchmarks and the screenshot script use it. ``examples`` is another checkout's
    examples folder (default: this one's). The copied project file."""
    source = examples or PACKAGE_ROOT.parent / "examples"
    into.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / PROJECT_FILE, into / PROJECT_FILE)
    for part in EXAMPLES_PARTS:
        shutil.copytree(source / part, into / part,
                        ignore=shutil.ignore_patterns("__pycache__", ".eval_home"))  # fmt: skip
    return into / PROJECT_FILE


def fall_back_to_examples() -> Path | None:
    """For the demo and this repository's code location: when no project file is found,
    the examples' (EVAL_PROJECT is set to it, so their store lives beside them too). The
    project file in use, or None when there is neither."""
    found = project_file()
    if found is None and (found := examples_project()) is not None:
        os.environ["EVAL_PROJECT"] = str(found)
    return found


def project_dir() -> Path:
    found = project_file()
    return found.parent if found is not None else Path.cwd()


def eval_home() -> Path:
    return Path(os.environ.get("EVAL_HOME") or project_dir() / ".eval_home")


def failures_dir(suite: str) -> Path:
    """Where each day's production failures of a suite wait to be run again (``<day>.yaml``)."""
    return eval_home() / "failures" / suite


def results_url() -> str:
    """EVAL_RESULTS_URL (e.g. postgresql+psycopg://…) or a SQLite file under EVAL_HOME."""
    return os.environ.get("EVAL_RESULTS_URL") or f"sqlite:///{eval_home() / 'results.sqlite'}"


def prices_file() -> Path | None:
    value = os.environ.get("EVAL_PRICES_FILE")
    return Path(value) if value else None
