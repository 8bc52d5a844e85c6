"""Generate the shipped orders: datasets/order_management/orders.csv.

    .venv/bin/python examples/scripts/generate_orders.py

150 orders of 30 customers over products of the catalog (id and name), with status,
carrier, tracking number and dates, from a fixed seed (re-running gives the same file).
"""

from __future__ import annotations

import csv
import random
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATUSES = [
    "processing",
    "shipped",
    "shipped",
    "delivered",
    "delivered",
    "delivered",
    "cancelled",
    "returned",
]
CARRIERS = ["UPS", "FedEx", "DHL", "USPS"]


def main() -> None:
    rng = random.Random(1122)
    with (ROOT / "datasets" / "product_discovery" / "catalog.csv").open(encoding="utf-8") as f:
        names = {row["product_id"]: row["name"] for row in csv.DictReader(f)}
    products = list(names)
    rows = []
    for n in range(150):
        status = rng.choice(STATUSES)
        ordered = date(2026, 10, 1) + timedelta(days=rng.randrange(50))
        shipped = status in ("shipped", "delivered", "returned")
        product = rng.choice(products)
        rows.append(
            {
                "order_id": f"ORD-{1001 + n}",
                "customer_id": f"C{1 + n % 30:03d}",
                "product_id": product,
                "product_name": names[product],
                "quantity": rng.choice([1, 1, 1, 2, 3]),
                "status": status,
                "ordered_on": ordered.isoformat(),
                "carrier": rng.choice(CARRIERS) if shipped else "",
                "tracking_number": f"TRK{rng.randrange(10**9):09d}" if shipped else "",
                "eta": (ordered + timedelta(days=rng.randint(3, 8))).isoformat() if shipped else "",
            }
        )
    path = ROOT / "datasets" / "order_management" / "orders.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{path}: {len(rows)} orders")


if __name__ == "__main__":
    main()
