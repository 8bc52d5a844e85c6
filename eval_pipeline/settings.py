"""Where things live. Every path can be overridden by an environment variable."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent


def project_root() -> Path:
    """The checkout (editable install / Docker image), else the working directory."""
    candidate = PACKAGE_ROOT.parent
    return candidate if (candidate / "datasets").is_dir() else Path.cwd()


def eval_home() -> Path:
    return Path(os.environ.get("EVAL_HOME") or project_root() / ".eval_home")


def datasets_dir() -> Path:
    return Path(os.environ.get("EVAL_DATASETS_DIR") or project_root() / "datasets")


def prompts_dir() -> Path:
    return Path(os.environ.get("EVAL_PROMPTS_DIR") or project_root() / "prompts")


def results_url() -> str:
    """EVAL_RESULTS_URL (e.g. postgresql+psycopg://…) or a SQLite file under EVAL_HOME."""
    return os.environ.get("EVAL_RESULTS_URL") or f"sqlite:///{eval_home() / 'results.sqlite'}"


def prices_file() -> Path | None:
    value = os.environ.get("EVAL_PRICES_FILE")
    return Path(value) if value else None
