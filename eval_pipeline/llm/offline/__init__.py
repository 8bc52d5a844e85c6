"""The offline model: a deterministic, rule-based tool-calling chat model (no network)."""

from eval_pipeline.llm.offline.model import OfflineChatModel

__all__ = ["OfflineChatModel"]
