"""eval-pipeline: evaluate LLM agents continuously, as Dagster assets, from the CLI, or from
Python with ``evaluate``.

What a user's code calls is here (a pytest that gates a change, a script, their Dagster
project's definitions: ``build_definitions``); what a plugin
registers is in ``eval_pipeline.plugins``. Both are the declared public surface: other
modules may move between releases. Names are imported on first use, so ``import
eval_pipeline`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eval_pipeline.agents.context import AgentContext
    from eval_pipeline.api import evaluate
    from eval_pipeline.core.errors import ConfigurationError, EvalError, ExitCode
    from eval_pipeline.core.evaluation import EvalResult, Verdict
    from eval_pipeline.core.store.records import ItemOutput, ItemScore
    from eval_pipeline.core.suites.cases import GoldenCase
    from eval_pipeline.defs import build_definitions

_PUBLIC = {
    "evaluate": "eval_pipeline.api",
    "EvalResult": "eval_pipeline.core.evaluation",
    "Verdict": "eval_pipeline.core.evaluation",
    "ExitCode": "eval_pipeline.core.errors",
    "EvalError": "eval_pipeline.core.errors",
    "ConfigurationError": "eval_pipeline.core.errors",
    "GoldenCase": "eval_pipeline.core.suites.cases",
    "AgentContext": "eval_pipeline.agents.context",
    "ItemOutput": "eval_pipeline.core.store.records",
    "ItemScore": "eval_pipeline.core.store.records",
    "build_definitions": "eval_pipeline.defs",
}
__all__ = [
    "AgentContext",
    "ConfigurationError",
    "EvalError",
    "EvalResult",
    "ExitCode",
    "GoldenCase",
    "ItemOutput",
    "ItemScore",
    "Verdict",
    "build_definitions",
    "evaluate",
]


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'eval_pipeline' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
