"""Bundles in DuckDB: ``open_store(paths)`` → a ``Store`` with documented tables (docs/store-schema.md)."""

from ._sql import first_value_map
from .loader import Store, open_store

__all__ = ["Store", "first_value_map", "open_store"]
