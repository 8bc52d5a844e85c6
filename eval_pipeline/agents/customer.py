"""The simulated customer: an LLM playing the customer from the case's goal and persona.

Its model is pinned (temperature 0) and it has a version: the hash of its model name and
prompt, so a different customer never reuses memoized conversations. It sees the agent's
replies, and the state fields the suite lets it see (``customer: {sees: [current_order]}``,
like the order screen at a drive-thru). It answers through a tool call (``CustomerReply``),
which every tool-calling model supports; offline, the offline model plays it
deterministically when a behaviour for it is registered (the examples register one:
examples/eval_examples/drive_thru/offline_customer.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from eval_pipeline.core.suites.conversation import GOAL_MARK, SCREEN_MARK, CustomerView

CUSTOMER_PROMPT = """You are a customer talking to an assistant (an agent under test).
Play the customer only: say what a customer would say next, in one or two short sentences.

What you want in the end:
{goal_mark} {goal}

Persona: {persona}

Steer towards your goal: answer the assistant's questions, correct anything that differs
from your goal, accept a reasonable alternative only when the goal lists it. When what you
see matches your goal, say you are done ordering; once the assistant has finished, set done.

{screen_mark} {screen}

Answer with the CustomerReply tool."""


class CustomerReply(BaseModel):
    """The customer's next words to the assistant."""

    utterance: str = Field(description="What the customer says next (empty when done).")
    done: bool = Field(description="True when the customer has nothing more to say.")


class LLMCustomer:
    """A ``Customer`` (core/suites/conversation.py) played by a chat model."""

    def __init__(self, model: BaseChatModel, sees: Sequence[str] = ()):
        self.model = model.bind_tools([CustomerReply], tool_choice="CustomerReply")
        self.sees = tuple(sees)
        name = str(getattr(model, "model_name", None) or getattr(model, "model", "unknown"))
        self.version = customer_version(name, self.sees)

    async def next_utterance(self, view: CustomerView) -> str | None:
        reply = await self.model.ainvoke(customer_messages(view, self.sees))
        calls = getattr(reply, "tool_calls", None) or []
        if not calls:
            raise ValueError(
                f"the customer model answered without CustomerReply: {reply.content!r}"
            )
        answer = CustomerReply.model_validate(calls[0]["args"])
        text = answer.utterance.strip()
        return None if answer.done or not text else text


def customer_version(model_name: str, sees: Sequence[str]) -> str:
    identity = json.dumps([model_name, CUSTOMER_PROMPT, list(sees)])
    return hashlib.sha256(identity.encode()).hexdigest()[:12]


def customer_messages(view: CustomerView, sees: Sequence[str]) -> list[BaseMessage]:
    """The talk from the customer's side: the agent's replies are what it hears (human
    turns), its own lines are its answers (AI turns)."""
    last = view.transcript[-1].state if view.transcript else {}
    screen = {name: last.get(name) for name in sees}
    system = CUSTOMER_PROMPT.format(
        goal_mark=GOAL_MARK, goal=_json(view.spec.goal), persona=view.spec.persona or "ordinary",
        screen_mark=SCREEN_MARK, screen=_json(screen),
    )  # fmt: skip
    messages: list[BaseMessage] = [SystemMessage(content=system)]
    if not view.transcript:
        messages.append(HumanMessage(content="(The assistant waits for you to speak.)"))
    for turn in view.transcript:
        messages.append(AIMessage(content=turn.customer))
        messages.append(HumanMessage(content=turn.reply or "(no answer)"))
    return messages


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
