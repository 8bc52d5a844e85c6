"""The product catalog (datasets/product_discovery/catalog.csv) and its tools."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from langchain_core.tools import BaseTool, tool


@dataclass(frozen=True)
class Product:
    product_id: str
    name: str
    category: str
    brand: str
    price: float
    rating: float
    stock: int
    reviews: tuple[str, ...]

    def summary(self) -> dict:
        return {
            "product_id": self.product_id,
            "name": self.name,
            "price": self.price,
            "rating": self.rating,
        }


class Catalog:
    def __init__(self, products: list[Product]):
        self.products = products
        self.by_id = {p.product_id: p for p in products}

    @property
    def categories(self) -> list[str]:
        return sorted({p.category for p in self.products})

    def search(
        self,
        query: str,
        category: str | None = None,
        max_price: float | None = None,
        min_rating: float | None = None,
        limit: int = 5,
    ) -> list[Product]:
        words = set(re.findall(r"[a-z0-9]+", query.lower())) - {"a", "the", "for", "and"}
        hits = []
        for p in self.products:
            if category and p.category != category.lower():
                continue
            if max_price is not None and p.price > max_price:
                continue
            if min_rating is not None and p.rating < min_rating:
                continue
            text = set(re.findall(r"[a-z0-9]+", f"{p.name} {p.category} {p.brand}".lower()))
            score = len(words & text)
            if score or not words or category:
                hits.append((-score, -p.rating, p.price, p.product_id, p))
        return [h[-1] for h in sorted(hits)[:limit]]


@cache
def load_catalog(path: Path) -> Catalog:
    with Path(path).open(encoding="utf-8") as handle:
        products = [
            Product(
                row["product_id"],
                row["name"],
                row["category"],
                row["brand"],
                float(row["price"]),
                float(row["rating"]),
                int(row["stock"]),
                tuple(r.strip() for r in row["reviews"].split("|")),
            )
            for row in csv.DictReader(handle)
        ]
    return Catalog(products)


def catalog_tools(catalog: Catalog) -> list[BaseTool]:
    @tool
    def search_products(
        query: str,
        category: str | None = None,
        max_price: float | None = None,
        min_rating: float | None = None,
    ) -> str:
        """Search the catalog; optional filters: category, max_price (USD), min_rating (1-5)."""
        found = catalog.search(query, category, max_price, min_rating)
        return json.dumps([p.summary() for p in found])

    @tool
    def get_product_details(product_id: str) -> str:
        """Full details of one product: brand, category, price, rating."""
        product = catalog.by_id.get(product_id)
        if product is None:
            return json.dumps({"error": f"no product {product_id}"})
        return json.dumps({k: v for k, v in asdict(product).items() if k != "reviews"})

    @tool
    def get_reviews(product_id: str) -> str:
        """Customer reviews and the average rating of one product."""
        product = catalog.by_id.get(product_id)
        if product is None:
            return json.dumps({"error": f"no product {product_id}"})
        return json.dumps(
            {"product_id": product_id, "rating": product.rating, "reviews": list(product.reviews)}
        )

    @tool
    def check_inventory(product_id: str) -> str:
        """Whether a product is in stock, and how many units."""
        product = catalog.by_id.get(product_id)
        if product is None:
            return json.dumps({"error": f"no product {product_id}"})
        return json.dumps(
            {"product_id": product_id, "in_stock": product.stock > 0, "units": product.stock}
        )

    return [search_products, get_product_details, get_reviews, check_inventory]
