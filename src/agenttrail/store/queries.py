"""The named SQL queries in ``queries/sql/`` (shipped in the wheel as ``agenttrail/_queries``)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .loader import Store


@cache
def query_dir() -> Path:
    packaged = Path(str(files("agenttrail"))) / "_queries" / "sql"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "queries" / "sql"  # source checkout


def names() -> list[str]:
    return sorted(p.stem for p in query_dir().glob("*.sql"))


def text(name: str) -> str:
    path = query_dir() / f"{name}.sql"
    if not path.is_file():
        raise StoreError(f"no named query {name!r}", f"choose from: {', '.join(names())}")
    return path.read_text(encoding="utf-8")


def description(name: str) -> str:
    first = text(name).splitlines()[0] if text(name) else ""
    return first.removeprefix("--").strip()


def run(store: Store, name: str) -> list[dict[str, Any]]:
    return store.rows(text(name))
