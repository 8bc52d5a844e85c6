"""Per-model token prices (USD per million tokens) used to estimate run cost."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.core import safe_yaml

if TYPE_CHECKING:
    from eval_pipeline.core.running.agent import UsageLedger

# Public list prices at the time of writing; override with EVAL_PRICES_FILE (YAML:
# ``model: {input: 0.15, output: 0.60}``) when yours differ.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "offline": (0.0, 0.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "mistral-small-latest": (0.10, 0.30),
}


class PriceTable:
    def __init__(self, prices: dict[str, tuple[float, float]] | None = None):
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)

    @classmethod
    def from_file(cls, path: Path | None) -> PriceTable:
        table = cls()
        if path is None:
            return table
        data = safe_yaml.load(Path(path).read_text(encoding="utf-8")) or {}
        for model, price in data.items():
            if not isinstance(price, dict) or not {"input", "output"} <= set(price):
                raise ValueError(f"{path}: model {model!r} needs 'input' and 'output' prices")
            table.prices[str(model)] = (float(price["input"]), float(price["output"]))
        return table

    def price(self, model: str) -> tuple[float, float] | None:
        """(input, output) USD per 1M tokens; a dated snapshot ("gpt-4o-mini-2024-07-18")
        takes its family's price; None when the model is unknown."""
        if model in self.prices:
            return self.prices[model]
        family = max((m for m in self.prices if model.startswith(m + "-")), key=len, default=None)
        return self.prices[family] if family else None

    def knows(self, model: str) -> bool:
        return self.price(model) is not None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price_in, price_out = self.price(model) or (0.0, 0.0)
        return (input_tokens * price_in + output_tokens * price_out) / 1_000_000

    def cost_of(self, usage: UsageLedger) -> tuple[float, list[str]]:
        """The cost of an item's model calls, and the models it could not price."""
        unpriced = sorted(m for m in usage.by_model if not self.knows(m))
        cost = sum(self.cost(m, u.input_tokens, u.output_tokens) for m, u in usage.by_model.items())
        return cost, unpriced
