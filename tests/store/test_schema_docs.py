"""docs/store-schema.md names every table, view and column the store creates."""

from __future__ import annotations

import re
from pathlib import Path

from agenttrail.store import open_store

DOC = Path(__file__).resolve().parents[2] / "docs" / "store-schema.md"


def test_every_table_and_column_is_documented(demo_bundle: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    store = open_store([demo_bundle])
    tables = [r[0] for r in store.sql("SELECT table_name FROM duckdb_tables() WHERE NOT temporary UNION "
                                      "SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary "
                                      "ORDER BY 1")]
    missing = []
    for table in tables:
        m = re.search(rf"^### .*`{table}`.*$", text, flags=re.M)
        if m is None:
            missing.append(table)
            continue
        section = text[m.end():].split("\n### ", 1)[0]
        for (col,) in store.sql("SELECT column_name FROM duckdb_columns() WHERE table_name = ?", [table]):
            if not re.search(rf"\b{col}\b", section):
                missing.append(f"{table}.{col}")
    store.close()
    assert missing == []
