"""Generate the shipped product catalog: datasets/product_discovery/catalog.csv.

    .venv/bin/python examples/scripts/generate_catalog.py

240 products in 12 categories with name, brand, price, rating, stock and short reviews,
from a fixed seed (re-running gives the same file). The product_discovery and
order_management agents' tools read it.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = {
    "running shoes": (
        ["Trail Runner", "Road Racer", "Cloud Stride", "Tempo", "Ultra Glide"],
        ["Stridewell", "Peakfoot", "Runlogic"],
        (49, 189),
    ),
    "headphones": (
        ["Quiet Comfort", "Bass Pro", "Studio Monitor", "Air Buds", "Sport Clip"],
        ["Sonara", "Audiokin", "Blue Lantern"],
        (19, 349),
    ),
    "laptops": (
        ["Ultrabook", "Workstation", "Chromebook", "Gaming Rig", "Convertible"],
        ["Novatech", "Corebyte", "Lumen"],
        (299, 2499),
    ),
    "coffee makers": (
        ["Pour Over Kit", "Espresso Pro", "Drip Brewer", "Cold Brew Tower", "French Press"],
        ["Bean & Co", "Brewcraft", "Morning Mill"],
        (19, 899),
    ),
    "backpacks": (
        ["Commuter Pack", "Hiking Daypack", "Travel Carry-On", "Laptop Sleeve Pack", "Rolltop"],
        ["Trailhead", "Urban Mule", "Packwell"],
        (29, 229),
    ),
    "tents": (
        [
            "Backpacking Tent",
            "Family Dome",
            "Ultralight Shelter",
            "Four Season Tent",
            "Pop-Up Tent",
        ],
        ["Summit Gear", "Campfire", "Northway"],
        (59, 699),
    ),
    "smartwatches": (
        ["Fitness Band", "Sport Watch", "Classic Smartwatch", "Kids Watch", "Dive Computer"],
        ["Pulsewise", "Timeline", "Orbit"],
        (39, 799),
    ),
    "blenders": (
        [
            "Personal Blender",
            "High Speed Blender",
            "Immersion Blender",
            "Smoothie Maker",
            "Food Processor",
        ],
        ["Whirl", "Kitchenary", "Blendix"],
        (25, 549),
    ),
    "office chairs": (
        ["Ergo Mesh Chair", "Executive Chair", "Task Chair", "Kneeling Chair", "Gaming Chair"],
        ["Sitwell", "Posturo", "Deskmate"],
        (79, 1199),
    ),
    "desk lamps": (
        ["LED Desk Lamp", "Architect Lamp", "Clamp Lamp", "Smart Lamp", "Reading Light"],
        ["Lumina", "Brightside", "Glowhaus"],
        (15, 189),
    ),
    "water bottles": (
        [
            "Insulated Bottle",
            "Filter Bottle",
            "Squeeze Bottle",
            "Glass Bottle",
            "Collapsible Bottle",
        ],
        ["Hydra", "Aquaflow", "Sipwell"],
        (9, 59),
    ),
    "yoga mats": (
        ["Grip Mat", "Travel Mat", "Cork Mat", "Thick Comfort Mat", "Hot Yoga Mat"],
        ["Zenfold", "Asana Co", "Balancewell"],
        (15, 149),
    ),
}
PRAISE = [
    "comfortable",
    "well made",
    "great value",
    "works as described",
    "fast delivery",
    "quiet",
    "sturdy",
    "easy to set up",
    "looks great",
    "lightweight",
]
COMPLAINTS = [
    "runs small",
    "battery could be better",
    "a bit loud",
    "instructions unclear",
    "scratches easily",
    "heavier than expected",
    "pricey for what it is",
]


def main() -> None:
    rng = random.Random(20261122)
    rows = []
    for c_index, (category, (models, brands, (low, high))) in enumerate(CATEGORIES.items()):
        for n in range(20):
            model = models[n % len(models)]
            brand = brands[n % len(brands)]
            generation = n // len(models) + 1
            rating = round(min(5.0, max(2.5, rng.gauss(4.1, 0.45))), 1)
            reviews = [
                f"{rng.choice(PRAISE) if rng.random() < rating / 5 else rng.choice(COMPLAINTS)}"
                for _ in range(3)
            ]
            rows.append(
                {
                    "product_id": f"P{c_index + 1:02d}{n + 1:02d}",
                    "name": f"{brand} {model} {generation}",
                    "category": category,
                    "brand": brand,
                    "price": round(rng.uniform(low, high), 2),
                    "rating": rating,
                    "stock": max(0, int(rng.gauss(25, 20))),
                    "reviews": " | ".join(reviews),
                }
            )
    path = ROOT / "datasets" / "product_discovery" / "catalog.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{path}: {len(rows)} products")


if __name__ == "__main__":
    main()
