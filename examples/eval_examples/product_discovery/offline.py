"""Offline policy for the product-discovery assistant (seed 001's shopping agent).

It reads the shopper's message like an LLM would: the category ("sneakers" → running
shoes), a budget ("under $100"), a rating floor ("4+ stars") and what they want to know
(reviews, stock, details). Then: search → the follow-up tools for the best hit, in one
parallel step → an answer naming the product with the fields asked for.

Prompt directives (case-insensitive phrases in the system prompt):
- ``search the catalog``: consult the tools before answering product questions; without
  it, the model answers from "memory" about a third of the time (ungrounded);
- ``include the price``: always state the price; without it, only when asked.
At temperature > 0 it sometimes skips a follow-up tool or leaves out a field.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

CATEGORY_WORDS = {
    "running shoes": ("running shoe", "sneaker", "trainer", "running shoes", "shoes"),
    "headphones": ("headphone", "earbud", "earphone", "headset", "buds"),
    "laptops": ("laptop", "notebook computer", "ultrabook", "chromebook"),
    "coffee makers": ("coffee", "espresso", "brewer", "french press"),
    "backpacks": ("backpack", "daypack", "rucksack", "carry-on"),
    "tents": ("tent", "shelter"),
    "smartwatches": ("smartwatch", "fitness band", "watch"),
    "blenders": ("blender", "smoothie", "food processor"),
    "office chairs": ("office chair", "desk chair", "chair"),
    "desk lamps": ("lamp", "reading light"),
    "water bottles": ("water bottle", "bottle"),
    "yoga mats": ("yoga mat", "mat"),
}
CHIT_CHAT = re.compile(
    r"^(hi|hello|hey|thanks|thank you|good (morning|evening)|who are you|"
    r"what can you do|how are you)\b",
    re.IGNORECASE,
)
WANTS = {
    "get_reviews": ("review", "what do people say", "customers think", "complain"),
    "check_inventory": ("in stock", "available", "availability", "inventory", "ship today"),
    "get_product_details": ("detail", "spec", "brand", "tell me more", "made by"),
}


def parse_request(text: str) -> dict[str, Any]:
    lower = text.lower()
    category = next(
        (c for c, words in CATEGORY_WORDS.items() if any(w in lower for w in words)), None
    )
    price = re.search(
        r"(?:under|below|less than|max(?:imum)?|up to)\s*\$?\s*(\d+(?:\.\d+)?)", lower
    )
    rating = re.search(
        r"(\d(?:\.\d)?)\s*\+?\s*(?:stars?|star rating)|rated (?:at least )?(\d(?:\.\d)?)", lower
    )
    wants = [tool for tool, words in WANTS.items() if any(w in lower for w in words)]
    return {
        "category": category,
        "max_price": float(price.group(1)) if price else None,
        "min_rating": float(rating.group(1) or rating.group(2)) if rating else None,
        "wants": wants,
        "asks_price": any(w in lower for w in ("price", "cost", "how much", "cheap", "$")),
        "asks_rating": any(w in lower for w in ("rating", "rated", "stars", "best")),
    }


def respond(turn: Any) -> AIMessage:
    human = next((m for m in reversed(turn.messages) if isinstance(m, HumanMessage)), None)
    text = str(human.content) if human else ""
    rules = turn.system.lower()
    request = parse_request(text)
    results = {
        m.tool_call_id: _json(m.content) for m in turn.messages if isinstance(m, ToolMessage)
    }
    calls = {c["id"]: c for m in turn.messages if isinstance(m, AIMessage) for c in m.tool_calls}
    if CHIT_CHAT.search(text.strip()) and request["category"] is None:
        return AIMessage(
            content="Hi! I can help you find products: tell me what you're after, "
            "a budget, or a rating you'd like."
        )
    if request["category"] is None:
        return AIMessage(content="Which kind of product are you looking for?")
    rng = random.Random(f"{turn.seed}:{text}")  # fixed for the whole conversation
    if not calls:
        if "search the catalog" not in rules and rng.random() < 0.35:
            return AIMessage(
                content=f"Most shoppers like a well-reviewed {request['category']} "
                "from a big brand; I'd go for a popular model."
            )
        args = {"query": request["category"], "category": request["category"]}
        args |= {k: request[k] for k in ("max_price", "min_rating") if request[k] is not None}
        return AIMessage(content="", tool_calls=[_call("search", "search_products", args)])
    found = results.get("call_search") or []
    if not isinstance(found, list) or not found:
        return AIMessage(content=f"I couldn't find any {request['category']} matching that.")
    top = found[0]
    follow = [t for t in request["wants"] if rng.random() >= turn.mistake_rate]
    pending = [t for t in follow if f"call_{t}" not in calls]
    if pending:
        return AIMessage(
            content="", tool_calls=[_call(t, t, {"product_id": top["product_id"]}) for t in pending]
        )
    drop = rng.random() < turn.mistake_rate
    return AIMessage(content=_answer(top, request, results, rules, drop))


def _answer(top: dict, request: dict, results: dict, rules: str, drop: bool) -> str:
    parts = [f"I'd recommend the {top['name']} ({top['product_id']})"]
    if ("include the price" in rules or request["asks_price"]) and not drop:
        parts.append(f"it costs ${top['price']:.2f}")
    if request["asks_rating"] or request["min_rating"] is not None:
        parts.append(f"rated {top['rating']} stars")
    sentence = ", ".join(parts) + "."
    extra = []
    if isinstance(stock := results.get("call_check_inventory"), dict) and "in_stock" in stock:
        extra.append(
            f"It is in stock ({stock['units']} units)."
            if stock["in_stock"]
            else "It is currently out of stock."
        )
    if isinstance(reviews := results.get("call_get_reviews"), dict) and reviews.get("reviews"):
        extra.append("Customers say: " + "; ".join(reviews["reviews"][:2]) + ".")
    if isinstance(details := results.get("call_get_product_details"), dict) and "brand" in details:
        extra.append(f"It is made by {details['brand']} ({details['category']}).")
    return " ".join([sentence, *extra])


def _call(key: str, name: str, args: dict) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{key}"}


def _json(content: Any) -> Any:
    try:
        return json.loads(str(content))
    except json.JSONDecodeError:
        return None
