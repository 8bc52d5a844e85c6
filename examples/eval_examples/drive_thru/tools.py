"""The agent's tools. They read the shipped menu and the order so far (graph state,
InjectedState) and return JSON strings; the graph's `update_order` node applies what
`add_item_to_order`, `change_order_line` and `remove_order_line` return. Order lines are
numbered from 1, as `get_current_order` shows them."""

from __future__ import annotations

import json
from typing import Annotated, Any

from langchain_core.tools import tool
from langgraph.prebuilt import InjectedState

from eval_examples.drive_thru.menu import (
    Menu,
    MenuItem,
    Order,
    OrderItem,
    OrderModifier,
    load_menu,
)
from eval_examples.inline_tools import on_event_loop

State = Annotated[dict, InjectedState]


def _item_view(menu: Menu, item: MenuItem) -> dict[str, Any]:
    modifiers = [m for m in map(menu.modifier, item.modifiers) if m]
    return {
        "item_id": item.item_id,
        "name": item.name,
        "price": item.price,
        "sizes": [s.value for s in item.sizes],
        "modifiers": [{"modifier_id": m.modifier_id, "name": m.name} for m in modifiers],
    }


@tool
def lookup_menu_item(query: str) -> str:
    """Look up a menu item by what the customer called it. Returns the item with its
    item_id, sizes and modifiers, the candidates when several items match, or not_found."""
    menu = load_menu()
    result = menu.lookup(query)
    payload: dict[str, Any] = {"status": result.status, "query": query}
    if result.item:
        payload["item"] = _item_view(menu, result.item)
    if result.status == "ambiguous":
        payload["candidates"] = [
            _item_view(menu, i) for name in result.candidates if (i := _by_name(menu, name))
        ]
    return json.dumps(payload)


def _by_name(menu: Menu, name: str) -> MenuItem | None:
    return next((i for i in menu.items if i.name == name), None)


@tool
def add_item_to_order(
    item_id: str,
    quantity: int = 1,
    size: str | None = None,
    modifiers: list[str] | None = None,
) -> str:
    """Add a menu item to the order. item_id must come from lookup_menu_item; size is one
    of the item's sizes; modifiers are modifier names or ids the item allows."""
    menu = load_menu()
    item = menu.item(item_id)
    if item is None:
        return _error(f"unknown item_id {item_id!r}: call lookup_menu_item first")
    if quantity < 1 or quantity > 50:
        return _error(f"quantity must be between 1 and 50, got {quantity}")
    if size and size not in {s.value for s in item.sizes}:
        if item.sizes:
            return _error(f"{item.name} comes in {', '.join(s.value for s in item.sizes)}")
        size = None  # one-size item: a size word adds nothing
    resolved = []
    for wanted in modifiers or []:
        modifier = menu.resolve_modifier(item, wanted)
        if modifier is None:
            allowed = [m.name for m in map(menu.modifier, item.modifiers) if m] or ["none"]
            return _error(f"{item.name} has no modifier {wanted!r} (allowed: {', '.join(allowed)})")
        resolved.append(OrderModifier(modifier_id=modifier.modifier_id, name=modifier.name))
    line = OrderItem(
        item_id=item.item_id, name=item.name, quantity=quantity, size=size, modifiers=resolved
    )
    summary = f"{quantity} × {item.name}" + (f" ({size})" if size else "")
    if resolved:
        summary += " with " + ", ".join(m.name.lower() for m in resolved)
    return json.dumps({"status": "added", "line": line.model_dump(mode="json"), "summary": summary})


@tool
def get_current_order(state: State) -> str:
    """Show the customer's order so far: numbered lines (line, item_id, name, quantity,
    size, modifiers)."""
    order: Order = state.get("current_order") or Order()
    lines = [{"line": n, **item.model_dump(mode="json")} for n, item in enumerate(order.items, 1)]
    return json.dumps({"status": "ok", "lines": lines, "finalized": order.finalized})


@tool
def change_order_line(
    line: int, state: State, quantity: int | None = None, size: str | None = None
) -> str:
    """Change the quantity and/or the size of one order line (its number from
    get_current_order)."""
    order: Order = state.get("current_order") or Order()
    if not 1 <= line <= len(order.items):
        return _error(f"no order line {line}: the order has {len(order.items)} line(s)")
    current = order.items[line - 1]
    fields = current.model_dump(mode="json")
    if quantity is not None:
        if quantity < 1 or quantity > 50:
            return _error(f"quantity must be between 1 and 50, got {quantity}")
        fields["quantity"] = quantity
    if size is not None:
        item = load_menu().item(current.item_id)
        sizes = {s.value for s in item.sizes} if item else set()
        if size not in sizes:
            return _error(f"{current.name} comes in {', '.join(sorted(sizes)) or 'one size'}")
        fields["size"] = size
    changed = OrderItem.model_validate(fields)
    summary = f"{changed.quantity} × {changed.name}" + (
        f" ({changed.size})" if changed.size else ""
    )
    return json.dumps({"status": "changed", "line_no": line,
                       "line": changed.model_dump(mode="json"), "summary": summary})  # fmt: skip


@tool
def remove_order_line(line: int, state: State) -> str:
    """Remove one order line (its number from get_current_order)."""
    order: Order = state.get("current_order") or Order()
    if not 1 <= line <= len(order.items):
        return _error(f"no order line {line}: the order has {len(order.items)} line(s)")
    removed = order.items[line - 1]
    return json.dumps({"status": "removed", "line_no": line, "summary": removed.name})


@tool
def finalize_order(state: State) -> str:
    """Finish the order when the customer says that is all."""
    order: Order = state.get("current_order") or Order()
    if not order.items:
        return _error("the order is empty; nothing to finalize")
    return json.dumps({"status": "finalized", "order": order.model_dump(mode="json")})


def _error(message: str) -> str:
    return json.dumps({"status": "error", "message": message})


TOOLS = on_event_loop([lookup_menu_item, add_item_to_order, get_current_order,
                       change_order_line, remove_order_line, finalize_order])  # fmt: skip
