"""Offline policy for the research agent: multi-hop questions over the search tool.

It recognises five question shapes about the corpus's fictional companies, founders and
cities, reads the facts out of the search results so far, and either searches for the
next entity (several searches in parallel when two entities are independent) or answers.

Prompt directives (case-insensitive phrases in the system prompt):
- ``search for each entity separately``: one search per entity, in parallel; without it,
  the entities are combined into one query;
- ``follow every hop``: look up the intermediate entity (the headquarters city, the
  founder's company) before answering; without it, answer after the first search.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

QUESTIONS = [
    ("earlier", re.compile(r"which was founded earlier, (?P<a>.+?) or (?P<b>.+?)\?", re.I)),
    ("country", re.compile(r"in which country is (?P<a>.+?) headquartered\?", re.I)),
    (
        "population",
        re.compile(r"population of the city where (?P<a>.+?) has its headquarters", re.I),
    ),
    ("founded", re.compile(r"who founded (?P<a>.+?),? and in which year\?", re.I)),
    ("founder_hq", re.compile(r"where is the company founded by (?P<a>.+?) headquartered\?", re.I)),
]
COMPANY = re.compile(
    r"(?P<name>[^.]+?) is an? [^.]+? company founded in (?P<year>\d{4}) by "
    r"(?P<founder>[^.]+)\. Its headquarters are in (?P<city>[^.]+)\."
)
CITY = re.compile(
    r"(?P<name>[^.]+?) is a city in (?P<country>.+?) with a population of "
    r"(?P<population>[\d,]+)\."
)
PERSON = re.compile(
    r"(?P<name>[^.]+?) is an entrepreneur best known for founding (?P<company>[^.]+)\."
)


def facts(messages: list[Any]) -> dict[str, dict[str, dict[str, str]]]:
    found: dict[str, dict[str, dict[str, str]]] = {"company": {}, "city": {}, "person": {}}
    for message in messages:
        if not isinstance(message, ToolMessage):
            continue
        try:
            docs = json.loads(str(message.content))
        except json.JSONDecodeError:
            continue
        for doc in docs if isinstance(docs, list) else []:
            text = str(doc.get("text", "")) if isinstance(doc, dict) else ""
            for kind, pattern in (("company", COMPANY), ("city", CITY), ("person", PERSON)):
                if match := pattern.match(text):
                    found[kind][match["name"].strip()] = match.groupdict()
    return found


def respond(turn: Any) -> AIMessage:
    human = next((m for m in turn.messages if isinstance(m, HumanMessage)), None)
    question = str(human.content) if human else ""
    shape, match = next(
        ((s, p.search(question)) for s, p in QUESTIONS if p.search(question)), (None, None)
    )
    if match is None:
        return AIMessage(
            content="I can answer questions about the companies, founders and "
            "cities in the document collection."
        )
    rules = turn.system.lower()
    separately = "search for each entity separately" in rules
    every_hop = "follow every hop" in rules
    known = facts(turn.messages)
    searched = any(isinstance(m, AIMessage) and m.tool_calls for m in turn.messages)
    companies, cities, people = known["company"], known["city"], known["person"]
    a = match["a"].strip()
    if shape == "earlier":
        b = match["b"].strip()
        if not searched:
            queries = [a, b] if separately else [f"{a} {b}"]
            return _search(turn, *queries)
        if a in companies and b in companies:
            ya, yb = int(companies[a]["year"]), int(companies[b]["year"])
            first = a if ya < yb else b
            return AIMessage(content=f"{first} was founded earlier ({a}: {ya}, {b}: {yb}).")
        return AIMessage(content="I could not find both founding years.")
    if shape == "founder_hq":
        if a not in people:
            return _search(turn, a) if not searched else _unknown()
        company = people[a]["company"].strip()
        if company not in companies and every_hop:
            return _search(turn, company)
        if company in companies:
            city = companies[company]["city"]
            return AIMessage(content=f"{company}, founded by {a}, is headquartered in {city}.")
        return AIMessage(content=f"{a} founded {company}, which is headquartered in its home town.")
    if a not in companies:
        return _search(turn, a) if not searched else _unknown()
    company = companies[a]
    if shape == "founded":
        return AIMessage(content=f"{a} was founded in {company['year']} by {company['founder']}.")
    city = company["city"].strip()
    if city not in cities and every_hop:
        return _search(turn, city)
    if city not in cities:  # answering without the second hop: a guess
        return AIMessage(content=f"{a} is headquartered in {city}.")
    if shape == "country":
        return AIMessage(content=f"{a} is headquartered in {city}, {cities[city]['country']}.")
    return AIMessage(
        content=f"{a} is headquartered in {city}, which has a population of "
        f"{cities[city]['population']}."
    )


def _search(turn: Any, *queries: str) -> AIMessage:
    step = sum(1 for m in turn.messages if isinstance(m, AIMessage) and m.tool_calls)
    calls = [
        {"name": "search", "args": {"query": q}, "id": f"call_{step}_{i}"}
        for i, q in enumerate(queries)
    ]
    return AIMessage(content="", tool_calls=calls)


def _unknown() -> AIMessage:
    return AIMessage(content="I could not find that in the documents.")
