"""A toy agent kind, whole in one file: ``agent: {oracle: expected_items}`` answers each
case with its own expected order (test_registry.py). A project file that lists this module
under ``plugins`` may use it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval_pipeline import GoldenCase
from eval_pipeline.plugins import AgentKind, AgentResult, Build, KindConfig, Loading
from eval_pipeline.plugins import register_agent_kind as register


class OracleConfig(KindConfig):
    oracle: str  # the expected_output key it answers with


class OracleAgent:
    def __init__(self, key: str):
        self.key = key

    async def run(self, case: GoldenCase, *, repeat: int, callbacks: Sequence[Any] = ()):
        items = (case.expected_output or {}).get(self.key) or []
        tools = ["lookup_menu_item", "add_item_to_order"] if items else []
        return AgentResult({"current_order": {"items": items}, "tools_called": tools})


@register
class OracleKind(AgentKind):
    key = "oracle"
    Config = OracleConfig

    def describe(self, config: OracleConfig, loading: Loading) -> tuple[str, tuple[Path, ...]]:
        return f"oracle {config.oracle}", (Path(__file__),)

    def build(self, config: OracleConfig, build: Build) -> OracleAgent:
        return OracleAgent(config.oracle)
