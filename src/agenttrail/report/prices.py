"""The price table the report uses to turn tokens into dollars.

Prices are USD per million tokens, matched on the model name by the longest prefix (so
``gpt-4o-2024-08-06`` uses ``gpt-4o`` and ``gpt-4o-mini-2024-07-18`` uses ``gpt-4o-mini``). The
built-in table is a convenience, not a source of truth: providers change prices, so pass your own
(``load_prices(path)`` reads JSON ``{"model-prefix": {"input": 2.5, "output": 10, "cache_read": 1.25}}``)
and it is laid over the defaults. A model with no price gets no cost (shown as "no price"), never a guess.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AgenttrailError


@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``cache_read`` defaults to the input price when unknown."""

    input: float
    output: float
    cache_read: float | None = None

    def cost(self, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0) -> float:
        cached = min(cache_read_tokens, input_tokens)
        cache_price = self.input if self.cache_read is None else self.cache_read
        return ((input_tokens - cached) * self.input + cached * cache_price
                + output_tokens * self.output) / 1e6


# List prices (USD / 1M tokens) of widely used models; override with your contract's.
DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "o3": Price(2.00, 8.00, 0.50),
    "o4-mini": Price(1.10, 4.40, 0.275),
    "claude-3-5-haiku": Price(0.80, 4.00, 0.08),
    "claude-3-7-sonnet": Price(3.00, 15.00, 0.30),
    "claude-sonnet-4": Price(3.00, 15.00, 0.30),
    "claude-opus-4": Price(15.00, 75.00, 1.50),
    "gemini-2.5-pro": Price(1.25, 10.00, 0.31),
    "gemini-2.5-flash": Price(0.30, 2.50, 0.075),
}


class PriceTable:
    """Longest-prefix lookup of a model's price."""

    def __init__(self, prices: Mapping[str, Price] | None = None, *, defaults: bool = True) -> None:
        merged: dict[str, Price] = dict(DEFAULT_PRICES) if defaults else {}
        merged.update(prices or {})
        # longest prefix first, then by name, so lookups are deterministic
        self._items = sorted(merged.items(), key=lambda kv: (-len(kv[0]), kv[0]))

    def lookup(self, model: str | None) -> Price | None:
        if not model:
            return None
        name = model.lower()
        for prefix, price in self._items:
            if name.startswith(prefix.lower()):
                return price
        return None

    def as_dict(self) -> dict[str, dict[str, float | None]]:
        return {k: {"input": p.input, "output": p.output, "cache_read": p.cache_read}
                for k, p in sorted(self._items)}


def parse_prices(doc: Any, source: str = "prices") -> dict[str, Price]:
    """``{"model": {"input": .., "output": .., "cache_read": ..}}`` → prices; raises on bad shapes."""
    if not isinstance(doc, dict):
        raise AgenttrailError(f"{source}: expected a JSON object of model → price",
                              'e.g. {"gpt-4o": {"input": 2.5, "output": 10}}')
    out: dict[str, Price] = {}
    for model, spec in doc.items():
        try:
            if not isinstance(spec, dict):
                raise TypeError("not an object")
            cache = spec.get("cache_read")
            out[str(model)] = Price(float(spec["input"]), float(spec["output"]),
                                    None if cache is None else float(cache))
        except (KeyError, TypeError, ValueError) as e:
            raise AgenttrailError(
                f"{source}: price of {model!r} is not {{input, output[, cache_read]}} numbers ({e})",
                "prices are USD per million tokens, e.g. {\"input\": 2.5, \"output\": 10}") from e
    return out


def load_prices(path: str | Path) -> dict[str, Price]:
    """Read a JSON price file (see the module docstring)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise AgenttrailError(f"{p}: cannot read the price file ({e.strerror})",
                              "pass a readable JSON file") from e
    except ValueError as e:
        raise AgenttrailError(f"{p}: not valid JSON ({e})", "fix the file; see docs/report.md") from e
    return parse_prices(doc, str(p))
