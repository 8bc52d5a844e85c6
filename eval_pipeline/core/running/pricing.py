"""Per-model token prices (USD per million tokens) used to estimate run cost."""

from __future__ import annotations

from pathlib import Path

import yaml

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
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        for model, price in data.items():
            if not isinstance(price, dict) or not {"input", "output"} <= set(price):
                raise ValueError(f"{path}: model {model!r} needs 'input' and 'output' prices")
            table.prices[str(model)] = (float(price["input"]), float(price["output"]))
        return table

    def knows(self, model: str) -> bool:
        return model in self.prices

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price_in, price_out = self.prices.get(model, (0.0, 0.0))
        return (input_tokens * price_in + output_tokens * price_out) / 1_000_000
