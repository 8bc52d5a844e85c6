"""The shop's orders (datasets/order_management/orders.csv) and the tools over them."""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path

from langchain_core.tools import BaseTool, tool

RETURNABLE = {"delivered"}


@cache
def load_orders(path: Path) -> dict[str, dict[str, str]]:
    with Path(path).open(encoding="utf-8") as handle:
        return {row["order_id"]: row for row in csv.DictReader(handle)}


def order_tools(orders: dict[str, dict[str, str]]) -> list[BaseTool]:
    def missing(order_id: str) -> str:
        return json.dumps({"error": f"no order {order_id}"})

    @tool
    def get_order_status(order_id: str) -> str:
        """Status of one order (processing, shipped, delivered, cancelled, returned)."""
        order = orders.get(order_id)
        if order is None:
            return missing(order_id)
        return json.dumps(
            {
                "order_id": order_id,
                "status": order["status"],
                "product": order["product_name"] or order["product_id"],
                "ordered_on": order["ordered_on"],
            }
        )

    @tool
    def track_shipment(order_id: str) -> str:
        """Carrier, tracking number and expected delivery date of a shipped order."""
        order = orders.get(order_id)
        if order is None:
            return missing(order_id)
        if not order["tracking_number"]:
            return json.dumps({"order_id": order_id, "error": f"not shipped ({order['status']})"})
        return json.dumps(
            {
                "order_id": order_id,
                "carrier": order["carrier"],
                "tracking_number": order["tracking_number"],
                "eta": order["eta"],
            }
        )

    @tool
    def list_orders(customer_id: str) -> str:
        """A customer's orders, newest first."""
        found = sorted(
            (o for o in orders.values() if o["customer_id"] == customer_id),
            key=lambda o: o["ordered_on"],
            reverse=True,
        )
        return json.dumps(
            [
                {"order_id": o["order_id"], "status": o["status"], "ordered_on": o["ordered_on"]}
                for o in found
            ]
        )

    @tool
    def request_return(order_id: str, reason: str) -> str:
        """Start a return; only delivered orders can be returned."""
        order = orders.get(order_id)
        if order is None:
            return missing(order_id)
        if order["status"] not in RETURNABLE:
            return json.dumps(
                {
                    "order_id": order_id,
                    "accepted": False,
                    "reason": f"order is {order['status']}, not delivered",
                }
            )
        return json.dumps(
            {
                "order_id": order_id,
                "accepted": True,
                "return_label": f"RL-{order_id}",
                "reason": reason,
            }
        )

    return [get_order_status, track_shipment, list_orders, request_return]
