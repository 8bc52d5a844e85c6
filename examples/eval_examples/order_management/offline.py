"""Offline policy for the order-management assistant (seed 001's support agent).

Reads order ids (``ORD-1234``) and customer ids (``C012``) from the message and what is
wanted: status, tracking, a list of orders, a return. Looks things up, then answers.

Prompt directives (case-insensitive phrases in the system prompt):
- ``look up the order``: always consult the tools; without it, status questions are
  sometimes answered with a generic reply (ungrounded);
- ``check the status before``: check an order's status before requesting a return;
  without it, returns are requested blindly.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

ORDER_ID = re.compile(r"\bORD-\d{4}\b", re.IGNORECASE)
CUSTOMER_ID = re.compile(r"\bC\d{3}\b")
CHIT_CHAT = re.compile(r"^(hi|hello|hey|thanks|thank you|good (morning|evening)|bye)\b", re.I)


def respond(turn: Any) -> AIMessage:
    human = next((m for m in reversed(turn.messages) if isinstance(m, HumanMessage)), None)
    text = str(human.content) if human else ""
    lower = text.lower()
    rules = turn.system.lower()
    rng = random.Random(f"{turn.seed}:{text}")
    results = {
        m.tool_call_id: _json(m.content) for m in turn.messages if isinstance(m, ToolMessage)
    }
    order = ORDER_ID.search(text)
    customer = CUSTOMER_ID.search(text)
    if order is None and customer is None:
        if CHIT_CHAT.search(text.strip()):
            return AIMessage(content="Hello! I can check, track or return your orders.")
        return AIMessage(content="Could you give me your order number (like ORD-1234)?")
    wants_return = any(w in lower for w in ("return", "refund", "send it back", "send back"))
    wants_tracking = any(w in lower for w in ("track", "where is", "shipment", "arrive", "when"))
    wants_list = customer is not None and order is None
    if not results and "look up the order" not in rules and rng.random() < 0.4:
        return AIMessage(content="Your order is on its way and should arrive soon.")
    needed: list[tuple[str, dict]] = []
    if wants_list:
        needed.append(("list_orders", {"customer_id": customer.group(0)}))
    if order is not None:
        order_id = order.group(0).upper()
        check_first = "check the status before" in rules and rng.random() >= turn.mistake_rate
        if not wants_return or check_first:
            needed.append(("get_order_status", {"order_id": order_id}))
        if wants_tracking and not wants_return:
            needed.append(("track_shipment", {"order_id": order_id}))
        status = (results.get("call_get_order_status") or {}).get("status")
        ready = not check_first or status is not None  # checked first when told to
        if wants_return and ready and status in (None, "delivered"):
            needed.append(("request_return", {"order_id": order_id, "reason": "customer request"}))
    pending = [(name, args) for name, args in needed if f"call_{name}" not in results]
    if pending:
        return AIMessage(
            content="", tool_calls=[{"name": n, "args": a, "id": f"call_{n}"} for n, a in pending]
        )
    return AIMessage(content=_answer(results))


def _answer(results: dict[str, Any]) -> str:
    parts = []
    if isinstance(listed := results.get("call_list_orders"), list):
        shown = ", ".join(f"{o['order_id']} ({o['status']})" for o in listed[:5])
        parts.append(
            f"You have {len(listed)} orders, newest first, with their status: {shown}."
            if listed
            else "No orders found."
        )
    status = results.get("call_get_order_status") or {}
    if "status" in status:
        parts.append(
            f"Order {status['order_id']} ({status['product']}) status: {status['status']}."
        )
    elif "error" in status:
        parts.append(f"I couldn't find that order: {status['error']}.")
    track = results.get("call_track_shipment") or {}
    if "tracking_number" in track:
        parts.append(
            f"It ships with {track['carrier']}, tracking number "
            f"{track['tracking_number']}, expected delivery {track['eta']}."
        )
    elif "error" in track and "status" not in status:
        parts.append(f"Tracking: {track['error']}.")
    ret = results.get("call_request_return") or {}
    if ret.get("accepted"):
        parts.append(f"Your return is started; return label {ret['return_label']}.")
    elif "accepted" in ret:
        parts.append(f"I couldn't start a return: {ret['reason']}.")
    elif status.get("status") and status["status"] != "delivered" and not track:
        parts.append("Only delivered orders can be returned.")
    return " ".join(parts) or "Done."


def _json(content: Any) -> Any:
    try:
        return json.loads(str(content))
    except json.JSONDecodeError:
        return None
