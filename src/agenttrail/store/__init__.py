"""Bundles in DuckDB: ``open_store(paths)`` → a ``Store`` with documented tables (docs/store-schema.md)."""

from .loader import Store, open_store

__all__ = ["Store", "open_store"]
