"""The offline model as a deterministic judge (for ``llm_judge`` with JudgeVerdict).

It grades the agent answer in the judge prompt with transparent heuristics: an empty
answer scores 0; a rubric asking for short answers scores the words per reply (≤ 15: 1.0,
≤ 30: 0.5, else 0); a step-similarity rubric ("same step") scores the share of words the
produced step shares with the reference (Jaccard); otherwise it starts at 0.5 and gains for
politeness and for mentioning what the rubric names, and loses for dismissive phrasing. In
a conversation ("Customer:" / "Assistant:" lines) only the assistant's lines count. Not a
real judge: a stable one.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

POLITE = ("please", "thank", "happy to", "glad", "sorry", "welcome", "hello", "hi!")
DISMISSIVE = ("can't help", "not my problem", "figure it out", "whatever")


def respond(turn: Any) -> AIMessage:
    prompt = next((str(m.content) for m in turn.messages if isinstance(m, HumanMessage)), "")
    rubric = _section(prompt, "Rubric:", "User input:").lower()
    answer = _section(prompt, "Agent answer:", "Return a score").strip()
    replies = [line.removeprefix("Assistant:").strip() for line in answer.splitlines()
               if line.startswith("Assistant:")]  # fmt: skip
    if replies:
        answer = "\n".join(replies)
    lower = answer.lower()
    if not answer or answer in ('""', "null"):
        score, why = 0.0, "the agent gave no answer"
    elif "same step" in rubric:  # seed 004's step similarity: shared words with the reference
        reference = set(re.findall(r"[a-z0-9]+", _section(prompt, "User input:", "Agent answer:")
                                   .lower()))  # fmt: skip
        produced = set(re.findall(r"[a-z0-9]+", lower))
        score = len(reference & produced) / len(reference | produced) if reference else 0.0
        score, why = round(score, 3), f"{score:.0%} of the words shared with the reference step"
    elif any(w in rubric for w in ("short", "concise", "brief")):
        words = [len(r.split()) for r in replies or [answer]]
        per_reply = sum(words) / len(words)
        score = 1.0 if per_reply <= 15 else 0.5 if per_reply <= 30 else 0.0
        why = f"{per_reply:.0f} words per reply"
    else:
        score, notes = 0.5, list[str]()
        if any(p in lower for p in POLITE):
            score, notes = score + 0.25, [*notes, "polite"]
        named = [w for w in re.findall(r"[a-z]{5,}", rubric) if w in lower]
        if named:
            score, notes = score + 0.25, [*notes, f"covers {', '.join(sorted(set(named))[:3])}"]
        if any(d in lower for d in DISMISSIVE):
            score, notes = score - 0.5, [*notes, "dismissive"]
        score = min(1.0, max(0.0, score))
        why = "; ".join(notes) or "a plain answer"
    call = {"name": "JudgeVerdict", "args": {"score": score, "reasoning": why}, "id": "judge"}
    return AIMessage(content="", tool_calls=[call])


def _section(text: str, start: str, end: str) -> str:
    head = text.split(start, 1)[1] if start in text else ""
    return head.split(end, 1)[0]
