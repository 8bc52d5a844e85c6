"""Per-model token prices (USD per million tokens) used to estimate run cost."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.util import safe_yaml

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
        """The default prices, with those of ``path`` (EVAL_PRICES_FILE) on top; a file
        that cannot be used raises PricesError naming it, the model and the field."""
        table = cls()
        if path is None:
            return table
        try:
            data = safe_yaml.load(Path(path).read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise PricesError(f"EVAL_PRICES_FILE {path}: cannot read it ({exc.strerror})") from None
        except UnicodeDecodeError as exc:
            raise PricesError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") \
                from None  # fmt: skip
        except yaml.YAMLError as exc:
            raise PricesError(f"{path}: malformed YAML: {exc}") from None
        if not isinstance(data, dict):
            raise PricesError(f"{path}: expected 'model: {{input: USD per 1M tokens, output: …}}'")
        for model, price in data.items():
            if not isinstance(price, dict) or not {"input", "output"} <= set(price):
                raise PricesError(f"{path}: model {model!r} needs 'input' and 'output' prices "
                                  "(USD per 1M tokens)")  # fmt: skip
            if unknown := sorted(set(map(str, price)) - {"input", "output"}):
                raise PricesError(f"{path}: model {model!r}: {unknown[0]!r} is not a price this "
                                  "file takes: only 'input' and 'output' (USD per 1M tokens); "
                                  "remove it (cached or batch prices are not counted)")  # fmt: skip
            table.prices[str(model)] = (_usd(path, model, "input", price["input"]),
                                        _usd(path, model, "output", price["output"]))  # fmt: skip
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


class PricesError(ConfigurationError):
    """EVAL_PRICES_FILE cannot be used; the message names the file, model and field."""


def _usd(path: Path, model: Any, field: str, value: Any) -> float:
    """A price: a finite number of USD per 1M tokens, not negative."""
    try:
        usd = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        usd = math.nan
    if not math.isfinite(usd) or usd < 0:
        raise PricesError(f"{path}: model {model!r}: {field}: {value!r} is not a price (a "
                          "number of USD per 1M tokens, 0 or more)")  # fmt: skip
    return usd
