"""The offline model: a deterministic, rule-based tool-calling chat model (no network),
answering with the behaviours registered for the tools an agent binds."""

from eval_pipeline.llm.offline.model import OfflineChatModel, Turn, register_behaviour

__all__ = ["OfflineChatModel", "Turn", "register_behaviour"]
