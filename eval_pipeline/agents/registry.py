"""All suites by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from eval_pipeline import settings
from eval_pipeline.agents.drive_thru.suite import build_suite as build_drive_thru
from eval_pipeline.agents.order_management.suite import build_suite as build_order_management
from eval_pipeline.agents.product_discovery.suite import build_suite as build_product_discovery
from eval_pipeline.agents.research.suite import build_suite as build_research
from eval_pipeline.core.suite import Suite

SUITE_BUILDERS: dict[str, Callable[[Path], Suite]] = {
    "drive_thru": build_drive_thru,
    "product_discovery": build_product_discovery,
    "order_management": build_order_management,
    "research": build_research,
}
AGENTS_DIR = Path(__file__).resolve().parent
SUITE_NAMES: tuple[str, ...] = tuple(SUITE_BUILDERS)


class UnknownSuiteError(KeyError):
    def __str__(self) -> str:
        return f"unknown suite {self.args[0]!r} (known: {', '.join(SUITE_NAMES)})"


def get_suite(name: str, datasets_dir: Path | None = None) -> Suite:
    if name not in SUITE_BUILDERS:
        raise UnknownSuiteError(name)
    suite = SUITE_BUILDERS[name](datasets_dir or settings.datasets_dir())
    # Conservative: an edit anywhere in the agents' code invalidates every suite's memo.
    return replace(suite, source_dirs=(AGENTS_DIR,))
