"""The offline model's drive-thru behaviour: parse an order, call the tools, answer.

The model knows the menu only from the system prompt (``- Name [item_id] ...`` lines)
and from tool results, as an LLM would. Prompt directives it obeys (case-insensitive):

=================  ==========================================  =====================
directive          recognised in the system prompt by          without it
=================  ==========================================  =====================
lookup_first       "lookup_menu_item before"                   adds straight from
                                                               the menu text, looks
                                                               up only unknown names
menu_only          "not on the menu"                           adds the closest
                                                               sounding menu item
clarify            "ask which"                                 adds the first match
modifiers          "modifier"                                  drops modifiers
=================  ==========================================  =====================
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

if TYPE_CHECKING:
    from eval_pipeline.plugins import Turn

DIRECTIVES = {
    "lookup_first": "lookup_menu_item before",
    "menu_only": "not on the menu",
    "clarify": "ask which",
    "modifiers": "modifier",
}

NUMBERS = {
    "a": 1, "an": 1, "one": 1, "the": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "couple": 2, "pair": 2, "dozen": 12,
}  # fmt: skip
SIZES = {"small", "medium", "large"}
ADD_WORDS = {"with", "add", "extra"}
REMOVE_WORDS = {"no", "without", "hold"}
FILLERS = re.compile(
    r"\b(uh+|um+|er+|hmm+|like|yeah|yo|okay|ok|just|please|thanks|thank you|"
    r"or whatever|of those|of them|of these|of|some)\b"
)
ORDER_CUES = re.compile(
    r"\b(i'?ll have|i will have|i'?d like|i would like|can i (?:get|have)|could i (?:get|have)|"
    r"may i (?:get|have)|give me|gimme|lemme (?:get|grab|have)|let me (?:get|grab|have)|"
    r"i'?ll take|i will take|i want|i need|get me)\b"
)
QUESTION_START = re.compile(
    r"^(what|when|where|why|how|who|which|do|does|is|are|was|were|can you|could you)\b"
)
GREETING = re.compile(r"\b(hi|hello|hey|good (?:morning|afternoon|evening)|howdy)\b")
# Later turns of a conversation: the customer is done, or changes what is ordered.
DONE = re.compile(
    r"\b(that'?s (?:all|it|everything)|that is (?:all|it)|nothing else|i'?m (?:good|done)|"
    r"that'?ll be (?:all|it))\b"
)
REMOVE = re.compile(
    r"\b(?:remove|take off|cancel|drop|scratch)\s+(?:the\s+|my\s+)?(?P<phrase>[\w\s'-]+)"
)
RESIZE = re.compile(
    r"\b(?:change|make|switch)\s+(?:the\s+|my\s+)?(?P<phrase>[\w\s'-]+?)\s+(?:to\s+)?(?:a\s+)?"
    r"(?P<size>small|medium|large)\b"
)
REQUANTIFY = re.compile(
    r"\bmake (?:that|it|those|them|the (?P<phrase>[\w\s'-]+?))\s+(?P<n>\d+|"
    + "|".join(sorted(NUMBERS, key=len, reverse=True))
    + r")\b(?:\s+(?P<tail>[\w\s'-]+))?"
)
MENU_LINE = re.compile(r"^\s*-\s*(?P<name>.+?)\s*\[(?P<id>[A-Za-z0-9_.-]+)\]", re.MULTILINE)
MODIFIER_LIST = re.compile(r"modifiers: ([^;)]+)")


@dataclass
class Mention:
    """One item the customer asked for."""

    phrase: str
    quantity: int = 1
    size: str | None = None
    modifiers: list[tuple[str, str]] = field(default_factory=list)  # (add|remove, ingredient)


def directives(system: str) -> set[str]:
    text = system.lower()
    return {name for name, phrase in DIRECTIVES.items() if phrase in text}


def menu_from_prompt(system: str) -> dict[str, str]:
    """``{normalised name: item_id}`` read from the menu listing in the system prompt."""
    return {_norm(m["name"]): m["id"] for m in MENU_LINE.finditer(system)}


def ingredients_from_prompt(system: str) -> set[str]:
    """Words the menu uses as modifiers ('Add Egg' → 'egg'), to read "cream and sugar"."""
    names = (n.strip() for m in MODIFIER_LIST.finditer(system) for n in m.group(1).split(","))
    return {" ".join(n.lower().split()[1:]) for n in names if len(n.split()) > 1}


def _norm(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower().replace("&", " and "))
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
                    for w in words)  # fmt: skip


def parse_utterance(
    text: str, known_names: list[str], ingredients: set[str] = frozenset()
) -> tuple[str, list[Mention]]:
    """Return (intent, mentions); intent is 'order', 'question' or 'greeting'."""
    lowered = text.lower().strip()
    cue = ORDER_CUES.search(lowered)
    if not cue and (QUESTION_START.search(lowered) or lowered.endswith("?")):
        return "question", []
    body = lowered[cue.end() :] if cue else lowered
    body = GREETING.sub(" ", body)
    body = FILLERS.sub(" ", body)
    body = re.sub(r"\bfor (me|us|here|the \w+|my \w+)\b.*", " ", body)
    body = body.replace("&", " and ")
    # Keep menu names that contain separators ("Hotcakes and Sausage") in one piece.
    for name in sorted(known_names, key=len, reverse=True):
        if " and " in name:
            pattern = r"\b" + r"[\s,]+".join(re.escape(w) + "s?" for w in name.split()) + r"\b"
            body = re.sub(pattern, name.replace(" ", "_"), body.replace(",", " , "))
    chunks = [c.strip() for c in re.split(r",|\band\b|\bplus\b|\balso\b|[.!?;]", body)]
    mentions: list[Mention] = []
    for chunk in filter(None, chunks):
        mention = _parse_chunk(chunk.replace("_", " "))
        if mentions and mentions[-1].modifiers and mention.phrase in ingredients:
            # "with cream and sugar": a bare ingredient continues the last modifier.
            mentions[-1].modifiers.append((mentions[-1].modifiers[-1][0], mention.phrase))
        elif mention.phrase:
            mentions.append(mention)
        elif mentions and mention.modifiers:
            mentions[-1].modifiers.extend(mention.modifiers)
    if not mentions:
        return ("greeting" if GREETING.search(lowered) else "question"), []
    return "order", mentions


def _parse_chunk(chunk: str) -> Mention:
    words = chunk.split()
    mention = Mention(phrase="")
    item_words: list[str] = []
    action: str | None = None
    for i, word in enumerate(words):
        if action is None and not item_words and (word.isdigit() or word in NUMBERS):
            mention.quantity = int(word) if word.isdigit() else NUMBERS[word]
            if word == "a" and i + 1 < len(words) and words[i + 1] in {"couple", "dozen", "pair"}:
                continue
        elif word in SIZES:
            mention.size = word
        elif word in ADD_WORDS or word in REMOVE_WORDS:
            action = "remove" if word in REMOVE_WORDS else "add"
        elif action is not None:
            if word not in {"the", "a", "an", "some"}:
                mention.modifiers.append((action, word))
        else:
            item_words.append(word)
    mention.phrase = " ".join(item_words)
    return mention


def _modifier_for(item: dict[str, Any], action: str, ingredient: str) -> str | None:
    """Pick the item's modifier whose name says the same thing, e.g. ('add', 'egg') → Add Egg."""
    for mod in item.get("modifiers", []):
        words = mod["name"].lower().split()
        mod_action = "remove" if words[0] in {"no", "without"} else "add"
        if mod_action == action and _norm(" ".join(words[1:])) == _norm(ingredient):
            return mod["name"]
    return None


def _turn_calls(turn: Turn) -> tuple[str, dict[str, tuple[dict, Any]]]:
    """The last customer utterance, and this turn's tool calls by id → (call, result)."""
    last_human = max(i for i, m in enumerate(turn.messages) if isinstance(m, HumanMessage))
    utterance = str(turn.messages[last_human].content)
    results = {
        m.tool_call_id: m.content for m in turn.messages[last_human:] if isinstance(m, ToolMessage)
    }
    calls: dict[str, tuple[dict, Any]] = {}
    for message in turn.messages[last_human:]:
        for call in getattr(message, "tool_calls", None) or []:
            raw = results.get(call["id"])
            try:
                parsed = json.loads(raw) if isinstance(raw, str) else raw
            except json.JSONDecodeError:
                parsed = {"status": "error", "message": raw}
            calls[call["id"]] = (call, parsed)
    return utterance, calls


def respond(turn: Turn) -> AIMessage:
    """Answer one step of a drive-thru conversation."""
    has_human = any(isinstance(m, HumanMessage) for m in turn.messages)
    if not has_human:
        return AIMessage(content="Welcome! What can I get started for you?")
    utterance, calls = _turn_calls(turn)
    lowered = utterance.lower()
    if DONE.search(lowered):
        return _finish(calls)
    if change := _change_request(lowered):
        return _change(change, calls)
    rules = directives(turn.system)
    menu = menu_from_prompt(turn.system)
    intent, mentions = parse_utterance(utterance, list(menu), ingredients_from_prompt(turn.system))
    if intent == "greeting":
        return AIMessage(content="Good morning! What can I get for you today?")
    if intent == "question":
        return AIMessage(
            content="Happy to help with that. Our full menu is on the board; "
            "what would you like to order?"
        )

    new_calls: list[dict[str, Any]] = []
    notes: list[str] = []
    added: list[str] = []
    for index, mention in enumerate(mentions):
        rng = turn.rng("mention", index, len(calls))
        # Ids say where an add came from: "blind" = without a lookup, "add" = after one.
        lookup_id, blind_id, add_id = (f"call_{index}_{k}" for k in ("lookup", "blind", "add"))
        done = next((calls[i] for i in (add_id, blind_id) if i in calls and _added(calls[i])), None)
        if done:
            added.append(done[1].get("summary") or done[0]["args"]["item_id"])
            continue
        if add_id in calls:
            notes.append(f"I couldn't add {mention.phrase}.")
            continue
        if lookup_id not in calls:
            direct = menu.get(_norm(mention.phrase))
            skip_lookup = "lookup_first" not in rules or rng.random() < turn.mistake_rate
            if direct and skip_lookup and blind_id not in calls:
                item = {"item_id": direct, "modifiers": []}
                new_calls.append(_add(blind_id, item, mention, rules, turn, rng, blind=True))
            else:  # look it up first, or after a blind add the tool refused
                new_calls.append(_lookup(lookup_id, mention))
            continue
        _, result = calls[lookup_id]
        status = result.get("status") if isinstance(result, dict) else "error"
        if status == "found":
            new_calls.append(_add(add_id, result["item"], mention, rules, turn, rng))
        elif status == "ambiguous" and "clarify" not in rules and result.get("candidates"):
            new_calls.append(_add(add_id, result["candidates"][0], mention, rules, turn, rng))
        elif status == "ambiguous":
            names = " or ".join(c["name"] for c in result.get("candidates", []))
            notes.append(f"Which {mention.phrase} would you like: {names}?")
        elif "menu_only" not in rules and (guess := _closest(mention.phrase, menu)):
            item = {"item_id": guess, "modifiers": []}
            new_calls.append(_add(add_id, item, mention, rules, turn, rng, blind=True))
        else:
            notes.append(f"Sorry, we don't have {mention.phrase} on our breakfast menu.")
    if new_calls:
        return AIMessage(content="", tool_calls=new_calls)
    parts = []
    if added:
        parts.append("Got it: " + ", ".join(added) + ".")
    parts.extend(notes)
    parts.append("Anything else?" if added else "What else can I get you?")
    return AIMessage(content=" ".join(parts))


def _added(call_and_result: tuple[dict, Any]) -> bool:
    result = call_and_result[1]
    return isinstance(result, dict) and result.get("status") == "added"


def _lookup(call_id: str, mention: Mention) -> dict[str, Any]:
    return {"name": "lookup_menu_item", "args": {"query": mention.phrase}, "id": call_id}


def _add(
    call_id: str,
    item: dict[str, Any],
    mention: Mention,
    rules: set[str],
    turn: Turn,
    rng: Any,
    blind: bool = False,
) -> dict[str, Any]:
    quantity = mention.quantity
    modifiers: list[str] = []
    if "modifiers" in rules:
        for action, ingredient in mention.modifiers:
            name = _modifier_for(item, action, ingredient)
            if name or blind:
                modifiers.append(name or f"{action} {ingredient}")
    if rng.random() < turn.mistake_rate:  # one sampled slip: a miscount or a lost modifier
        if modifiers and rng.random() < 0.5:
            modifiers.pop(rng.randrange(len(modifiers)))
        else:
            quantity = max(1, quantity + rng.choice([-1, 1]))
    args: dict[str, Any] = {"item_id": item["item_id"], "quantity": quantity}
    if mention.size:
        args["size"] = mention.size
    if modifiers:
        args["modifiers"] = modifiers
    return {"name": "add_item_to_order", "args": args, "id": call_id}


def _closest(phrase: str, menu: dict[str, str]) -> str | None:
    """The menu item sharing the most words with the phrase (what a guessing model adds)."""
    words = set(_norm(phrase).split())
    scored = [(len(words & set(name.split())), name) for name in menu]
    best = max(scored, default=(0, ""))
    return menu[best[1]] if best[0] else None


@dataclass(frozen=True)
class ChangeRequest:
    """A change to an order line: remove it, or set its quantity or size. ``phrase`` names
    the line (empty: the last line ordered)."""

    action: str  # remove | quantity | size
    phrase: str
    quantity: int | None = None
    size: str | None = None


def _change_request(text: str) -> ChangeRequest | None:
    if m := REMOVE.search(text):
        return ChangeRequest("remove", _norm(m["phrase"]))
    if m := RESIZE.search(text):
        phrase = "" if m["phrase"] in {"that", "it"} else _norm(m["phrase"])
        return ChangeRequest("size", phrase, size=m["size"])
    if m := REQUANTIFY.search(text):
        n = int(m["n"]) if m["n"].isdigit() else NUMBERS[m["n"]]
        return ChangeRequest("quantity", _norm(m["phrase"] or m["tail"] or ""), quantity=n)
    return None


def _change(request: ChangeRequest, calls: dict[str, tuple[dict, Any]]) -> AIMessage:
    """Read the order, then change or remove the line the customer means."""
    if "call_order" not in calls:
        return AIMessage(content="", tool_calls=[
            {"name": "get_current_order", "args": {}, "id": "call_order"}])  # fmt: skip
    if "call_change" in calls:
        result = calls["call_change"][1]
        if isinstance(result, dict) and result.get("status") in {"changed", "removed"}:
            done = "removed" if result["status"] == "removed" else "now"
            return AIMessage(content=f"Done: {done} {result.get('summary')}. Anything else?")
        return AIMessage(content=f"Sorry, I couldn't change that ({_message(result)}).")
    lines = (calls["call_order"][1] or {}).get("lines") or []
    line = _line_for(request.phrase, lines)
    if line is None:
        return AIMessage(content=f"I don't see {request.phrase or 'that'} on your order.")
    if request.action == "remove":
        call = {"name": "remove_order_line", "args": {"line": line}, "id": "call_change"}
    else:
        args: dict[str, Any] = {"line": line}
        args |= (
            {"quantity": request.quantity}
            if request.action == "quantity"
            else {"size": request.size}
        )
        call = {"name": "change_order_line", "args": args, "id": "call_change"}
    return AIMessage(content="", tool_calls=[call])


def _line_for(phrase: str, lines: list[dict[str, Any]]) -> int | None:
    """The line whose item name shares the most words with the phrase; the last line when
    the customer said "that"."""
    if not lines:
        return None
    if not phrase:
        return int(lines[-1]["line"])
    words = set(phrase.split())
    scored = [(len(words & set(_norm(line["name"]).split())), int(line["line"])) for line in lines]
    best = max(scored)
    return best[1] if best[0] else None


def _finish(calls: dict[str, tuple[dict, Any]]) -> AIMessage:
    if "call_finish" not in calls:
        return AIMessage(content="", tool_calls=[
            {"name": "finalize_order", "args": {}, "id": "call_finish"}])  # fmt: skip
    result = calls["call_finish"][1]
    if isinstance(result, dict) and result.get("status") == "finalized":
        return AIMessage(content="Thank you! Please pull up to the window.")
    return AIMessage(content=f"Your order is empty ({_message(result)}). What would you like?")


def _message(result: Any) -> str:
    return str(result.get("message")) if isinstance(result, dict) else str(result)
