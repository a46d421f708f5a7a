"""What an LLM call cost: a price table (USD per million tokens) matched to models by prefix.

The built-in table holds public list prices of common models at the time of writing; they change, so
every price can be overridden (docs/store-schema.md#prices). Sources, later ones win per model prefix:

1. the built-in table below;
2. ``$XDG_CONFIG_HOME/agenttrail/prices.toml`` (default ``~/.config/agenttrail/prices.toml``);
3. the file named by ``$AGENTTRAIL_PRICES``;
4. ``--prices FILE`` on the command line (``open_store(..., prices=FILE)``).

File format::

    [models."gpt-4o"]          # a model name prefix; the longest matching prefix wins
    input = 2.50               # USD per 1M input tokens that were not cache hits
    output = 10.00             # USD per 1M output tokens
    cache_read = 1.25          # optional, default = input
    cache_write = 2.50         # optional, default = input

``llm_calls.cost_usd`` is NULL for a model without a price, so an unknown model never counts as free.
Following the GenAI conventions, ``input_tokens`` includes cached tokens; they are priced at the
cache rates and the rest at ``input``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Final

import duckdb

from ..errors import StoreError

# (prefix, input, output, cache_read, cache_write) in USD per 1M tokens.
PriceRow = tuple[str, float, float, float | None, float | None]

BUILTIN: Final[tuple[PriceRow, ...]] = (
    ("gpt-4o", 2.50, 10.00, 1.25, None),
    ("gpt-4o-mini", 0.15, 0.60, 0.075, None),
    ("gpt-4.1", 2.00, 8.00, 0.50, None),
    ("gpt-4.1-mini", 0.40, 1.60, 0.10, None),
    ("gpt-4.1-nano", 0.10, 0.40, 0.025, None),
    ("o3", 2.00, 8.00, 0.50, None),
    ("o4-mini", 1.10, 4.40, 0.275, None),
    ("claude-3-5-sonnet", 3.00, 15.00, 0.30, 3.75),
    ("claude-3-7-sonnet", 3.00, 15.00, 0.30, 3.75),
    ("claude-sonnet-4", 3.00, 15.00, 0.30, 3.75),
    ("claude-3-5-haiku", 0.80, 4.00, 0.08, 1.00),
    ("claude-opus-4", 15.00, 75.00, 1.50, 18.75),
    ("gemini-2.5-pro", 1.25, 10.00, 0.31, None),
    ("gemini-2.5-flash", 0.30, 2.50, 0.075, None),
)

COST_SQL: Final = """CASE WHEN p.prefix IS NULL THEN NULL ELSE (
    greatest(c.input_tokens - c.cache_read_tokens - c.cache_write_tokens, 0) * p.input_per_m
    + c.cache_read_tokens * coalesce(p.cache_read_per_m, p.input_per_m)
    + c.cache_write_tokens * coalesce(p.cache_write_per_m, p.input_per_m)
    + c.output_tokens * p.output_per_m) / 1e6 END"""


def user_price_files() -> list[Path]:
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "agenttrail" / "prices.toml"
    out = [config] if config.is_file() else []
    env = os.environ.get("AGENTTRAIL_PRICES")
    if env:
        out.append(Path(env))
    return out


def read_price_file(path: Path) -> list[PriceRow]:
    """Prices from one TOML file; a malformed file is an input error (exit 2) naming the entry."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise StoreError(f"{path}: price file not found", "pass an existing prices.toml") from e
    except tomllib.TOMLDecodeError as e:
        raise StoreError(f"{path}: not valid TOML ({e})", "see docs/store-schema.md#prices") from e
    models = doc.get("models")
    if not isinstance(models, dict):
        raise StoreError(f"{path}: no [models.\"<prefix>\"] tables", "see docs/store-schema.md#prices")
    rows: list[PriceRow] = []
    for prefix, entry in models.items():
        try:
            rows.append((str(prefix), float(entry["input"]), float(entry["output"]),
                         None if entry.get("cache_read") is None else float(entry["cache_read"]),
                         None if entry.get("cache_write") is None else float(entry["cache_write"])))
        except (KeyError, TypeError, ValueError) as e:
            raise StoreError(f"{path}: models.{prefix!r} needs numeric input and output prices ({e})",
                             "e.g. [models.\"gpt-4o\"] input = 2.5  output = 10.0") from e
    return rows


def load_prices(extra: Path | None = None) -> list[PriceRow]:
    """The effective price table: built-ins, then user files, then ``extra``; later wins per prefix."""
    table: dict[str, PriceRow] = {row[0]: row for row in BUILTIN}
    for path in [*user_price_files(), *([extra] if extra else [])]:
        for row in read_price_file(path):
            table[row[0]] = row
    return sorted(table.values())


def create_table(con: duckdb.DuckDBPyConnection, rows: list[PriceRow]) -> None:
    con.execute("""CREATE OR REPLACE TABLE prices (prefix VARCHAR, input_per_m DOUBLE, output_per_m DOUBLE,
                                                   cache_read_per_m DOUBLE, cache_write_per_m DOUBLE)""")
    con.executemany("INSERT INTO prices VALUES (?, ?, ?, ?, ?)", rows)
