"""Bundles in DuckDB: ``open_store(paths)`` → a ``Store`` with documented tables (docs/store-schema.md)."""

from ._sql import first_value_map
from .loader import Store, open_store

# A span's attributes as a MAP even when its exporter repeated a key (``spans.attributes`` is NULL
# there): for the few rows a view shows.
SPAN_ATTRIBUTES = first_value_map("attr_keys", "attr_values")

__all__ = ["SPAN_ATTRIBUTES", "Store", "first_value_map", "open_store"]
