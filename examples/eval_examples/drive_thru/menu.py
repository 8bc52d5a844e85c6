"""The breakfast menu: pydantic models, the shipped menu, and name matching.

Name matching lives here (not in the model) because it is what the
`lookup_menu_item` tool does: the agent asks, the menu answers.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, Field


class Size(StrEnum):
    SMALL = "small"
    MEDIUM = "medium"
    LARGE = "large"


class Modifier(BaseModel):
    modifier_id: str
    name: str
    ingredient: str
    action: Literal["add", "remove"]


class MenuItem(BaseModel):
    item_id: str
    name: str
    category: str
    price: float
    aliases: list[str] = Field(default_factory=list)
    sizes: list[Size] = Field(default_factory=list)
    modifiers: list[str] = Field(default_factory=list)


class OrderModifier(BaseModel):
    modifier_id: str
    name: str


class OrderItem(BaseModel):
    item_id: str
    name: str
    quantity: int = Field(ge=1)
    size: Size | None = None
    modifiers: list[OrderModifier] = Field(default_factory=list)


class Order(BaseModel):
    items: list[OrderItem] = Field(default_factory=list)
    finalized: bool = False


class LookupResult(BaseModel):
    status: Literal["found", "ambiguous", "not_found"]
    query: str
    item: MenuItem | None = None
    candidates: list[str] = Field(default_factory=list)


def normalize(text: str) -> str:
    """Lower-case, '&' → 'and', drop punctuation, singularise plain plurals."""
    text = text.lower().replace("&", " and ")
    words = re.findall(r"[a-z0-9]+", text)
    return " ".join(_singular(w) for w in words)


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


class Menu(BaseModel):
    location: str
    modifiers: list[Modifier]
    items: list[MenuItem]

    def item(self, item_id: str) -> MenuItem | None:
        return next((i for i in self.items if i.item_id == item_id), None)

    def modifier(self, modifier_id: str) -> Modifier | None:
        return next((m for m in self.modifiers if m.modifier_id == modifier_id), None)

    @property
    def item_ids(self) -> frozenset[str]:
        return frozenset(i.item_id for i in self.items)

    def lookup(self, query: str) -> LookupResult:
        """Exact name/alias first; else every item whose name holds all query words."""
        wanted = normalize(query)
        if not wanted:
            return LookupResult(status="not_found", query=query)
        for item in self.items:
            if wanted in {normalize(n) for n in [item.name, *item.aliases]}:
                return LookupResult(status="found", query=query, item=item)
        words = set(wanted.split())
        hits = [
            item
            for item in self.items
            if any(words <= set(normalize(n).split()) for n in [item.name, *item.aliases])
        ]
        if len(hits) == 1:
            return LookupResult(status="found", query=query, item=hits[0])
        if hits:
            return LookupResult(status="ambiguous", query=query, candidates=[i.name for i in hits])
        return LookupResult(status="not_found", query=query)

    def resolve_modifier(self, item: MenuItem, wanted: str) -> Modifier | None:
        """Map a modifier id or name ('Add Egg', 'no-cheese') to one the item allows."""
        key = normalize(wanted.replace("-", " "))
        for modifier_id in item.modifiers:
            modifier = self.modifier(modifier_id)
            if modifier and key in {
                normalize(modifier.modifier_id.replace("-", " ")),
                normalize(modifier.name),
            }:
                return modifier
        return None

    def describe(self) -> str:
        """A compact text menu for system prompts."""
        lines = []
        for item in self.items:
            extras = []
            if item.sizes:
                extras.append("sizes: " + "/".join(s.value for s in item.sizes))
            if item.modifiers:
                names = [m.name for m in map(self.modifier, item.modifiers) if m]
                extras.append("modifiers: " + ", ".join(names))
            suffix = f" ({'; '.join(extras)})" if extras else ""
            lines.append(f"- {item.name} [{item.item_id}] ${item.price:.2f}{suffix}")
        return "\n".join(lines)


@cache
def load_menu() -> Menu:
    """The menu shipped with the package (read once per process)."""
    text = resources.files(__package__).joinpath("menu.json").read_text(encoding="utf-8")
    return Menu.model_validate_json(text)
