"""`OfflineChatModel`: a real LangChain chat model that needs no API key.

It reads the conversation, the system prompt and the bound tools the way an LLM does
and answers with text or tool calls. Behaviour is deterministic for a given
(conversation, seed, temperature): with ``temperature > 0`` it makes seeded mistakes,
so repeats differ the way sampled LLM answers do, reproducibly. Which rules it follows
depends on directives in the system prompt (see docs/offline-model.md), so a worse
prompt version really scores worse.

What it knows is registered, not built in: a behaviour answers the turns of one kind of
agent, recognised by the tools it was given. The package registers one, the LLM judge's
(``JudgeVerdict``); the examples register their agents' (examples/eval_examples), and a
team may register its own from a plugin module of its project file. Without a behaviour
for the bound tools it says what it is and calls no tool.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from eval_pipeline.core.running.agent import current_item
from eval_pipeline.llm.offline import grader

OFFLINE_MODEL_NAME = "offline"

# A behaviour answers one turn for one kind of agent, chosen by the tools it was given.
Behaviour = Callable[["Turn"], AIMessage]
BEHAVIOURS: dict[frozenset[str], Behaviour] = {}


def register_behaviour(tools: Iterable[str], respond: Behaviour) -> Behaviour:
    """Answer with ``respond`` every turn whose bound tools include all of ``tools``. The
    first registered match wins; registering the same tool set again replaces it."""
    needed = frozenset(tools)
    if not needed:
        raise ValueError("a behaviour names the tools that identify its agent")
    BEHAVIOURS[needed] = respond
    return respond


class Turn:
    """What a policy sees: the conversation, the tools, and a seeded random source."""

    def __init__(
        self,
        messages: Sequence[BaseMessage],
        tools: Sequence[dict[str, Any]],
        temperature: float,
        seed: int,
    ):
        self.messages = list(messages)
        self.tools = list(tools)
        self.temperature = temperature
        self.seed = seed
        self.system = "\n\n".join(
            str(m.content) for m in self.messages if isinstance(m, SystemMessage)
        )

    @property
    def tool_names(self) -> set[str]:
        return {t["function"]["name"] for t in self.tools}

    def rng(self, *parts: object) -> random.Random:
        """A random source fixed by the seed, the conversation so far and ``parts``."""
        key = json.dumps([self.seed, [m.content for m in self.messages], *map(str, parts)])
        return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))

    @property
    def mistake_rate(self) -> float:
        """Chance of one sampled mistake per decision: 0 at temperature 0, capped at 0.6."""
        return min(0.6, 0.3 * max(self.temperature, 0.0))


def _item_seed(default: int) -> int:
    """The running item's seed (see core/running/agent.py), else the model's own."""
    scope = current_item.get()
    return scope.seed if scope is not None else default


def estimate_tokens(text: str) -> int:
    """Roughly 4 characters per token (the usual rule of thumb for English)."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


class OfflineChatModel(BaseChatModel):
    """Deterministic tool-calling model; the default when no LLM endpoint is configured."""

    model_name: str = OFFLINE_MODEL_NAME
    temperature: float = 0.0
    seed: int = 0

    @property
    def _llm_type(self) -> str:
        return "eval-pipeline-offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = Turn(
            messages,
            kwargs.get("tools") or [],
            temperature=float(kwargs.get("temperature", self.temperature)),
            seed=int(kwargs.get("seed", _item_seed(self.seed)) or 0),
        )
        message = self._respond(turn)
        prompt_text = json.dumps([m.content for m in messages]) + json.dumps(turn.tools)
        output_text = str(message.content) + json.dumps(message.tool_calls)
        message.usage_metadata = {
            "input_tokens": estimate_tokens(prompt_text),
            "output_tokens": estimate_tokens(output_text),
            "total_tokens": estimate_tokens(prompt_text) + estimate_tokens(output_text),
        }
        message.response_metadata = {"model_name": self.model_name, "finish_reason": "stop"}
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Pure CPU and fast: answering inline beats a thread-pool hop.
        return self._generate(messages, stop=stop, **kwargs)

    @staticmethod
    def _respond(turn: Turn) -> AIMessage:
        for needed, respond in BEHAVIOURS.items():
            if needed <= turn.tool_names:
                return respond(turn)
        bound = ", ".join(sorted(turn.tool_names)) or "no tools"
        return AIMessage(
            content=f"I'm the offline model: no behaviour is registered for an agent with "
            f"{bound} (see docs/offline-model.md)."
        )


register_behaviour({"JudgeVerdict"}, grader.respond)  # the package's own: the LLM judge
