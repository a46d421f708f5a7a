"""SQL console: run queries against the store; results in a virtual table; named queries from a picker."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Select, TextArea

from ...store import queries as named_queries
from ..context import RunContext, ShowDetail, in_thread
from ..data import Cursor, QueryResult, named_query_list, run_query
from ..widgets.detail import fields_table
from ..widgets.vtable import Column, VirtualTable, format_value

DEFAULT_SQL = "SELECT tool, status, count(*) AS calls\nFROM tool_calls\nGROUP BY ALL\nORDER BY calls DESC"


class ArrowSource:
    """Windows of an Arrow table (a query result): slicing is zero-copy."""

    def __init__(self, result: QueryResult) -> None:
        self.result = result

    def count(self) -> int:
        return self.result.count

    def fetch(self, offset: int, limit: int) -> list[tuple[Any, ...]]:
        part = self.result.rows.slice(offset, limit).to_pylist()
        return [tuple(r.values()) for r in part]


def result_columns(names: tuple[str, ...], sample: list[tuple[Any, ...]]) -> list[Column]:
    """Columns as wide as their header and the first rows (at most 32), the last one takes the rest."""
    if not names:
        return []
    cols: list[Column] = []
    for i, n in enumerate(names):
        width = max([len(n), *(len(format_value(r[i])) for r in sample if i < len(r))])
        numeric = bool(sample) and all(isinstance(r[i], int | float) for r in sample if r[i] is not None)
        cols.append(Column(n, n, min(width, 32), align="right" if numeric else "left"))
    last = cols[-1]
    cols[-1] = Column(last.key, last.label, None if last.align == "left" else last.width, last.align)
    return cols


class SqlView(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r,f5", "run", "Run query", priority=True),
        Binding("escape", "leave_editor", "Leave editor"),
    ]

    ctx: RunContext | None = None
    clock: Callable[[], float] = staticmethod(time.perf_counter)  # tests freeze it: snapshots are exact

    def compose(self) -> ComposeResult:
        with Horizontal(classes="toolbar"):
            yield Select[str]([(f"{n} — {d}", n) for n, d in named_query_list()], prompt="named query…",
                              compact=True, id="named-query")
            yield Label(Text("ctrl+r runs", style="dim"), id="sql-status")
        yield TextArea(DEFAULT_SQL, id="sql-editor", show_line_numbers=False, soft_wrap=False)
        yield VirtualTable(id="sql-results", empty_text="run a query: ctrl+r (or F5)")

    def on_mount(self) -> None:
        self.query_one(TextArea).cursor_blink = False

    def show_run(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def action_leave_editor(self) -> None:
        self.table.focus()

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#sql-results", VirtualTable)

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, str):
            self.query_one(TextArea).text = named_queries.text(event.value).strip()
            self.action_run()

    def run_sql(self, sql: str) -> None:
        self.query_one(TextArea).text = sql
        self.action_run()

    def action_run(self) -> None:
        if self.ctx is None:
            return
        sql = self.query_one(TextArea).text.strip()
        if not sql:
            return
        self.query_one("#sql-status", Label).update(Text("running…", style="dim"))
        self.table.loading = True
        started = self.clock()
        in_thread(self.app, self.ctx.store, partial(_query_job, sql=sql),
                  partial(self._done, started), group="sql", description="SQL query")

    def _done(self, started: float, result: QueryResult) -> None:
        self.table.loading = False
        ms = (self.clock() - started) * 1000
        source = ArrowSource(result)
        self.table.set_source(result_columns(result.columns, source.fetch(0, 100)), source)
        self.query_one("#sql-status", Label).update(
            Text(f"{result.count:,} rows · {ms:,.0f} ms", style="dim"))

    def query_failed(self) -> None:
        self.table.loading = False
        self.query_one("#sql-status", Label).update(Text("query failed", style="red"))

    def on_virtual_table_highlighted(self, event: VirtualTable.Highlighted) -> None:
        event.stop()
        if event.row is None:
            return
        cols = [c.key for c in self.table.columns]
        self.post_message(ShowDetail(self, f"row {event.index + 1}", [
            ("", fields_table(dict(zip(cols, event.row, strict=False)), 24))]))


def _query_job(cur: Cursor, *, sql: str) -> QueryResult:
    import duckdb

    from ...errors import StoreError

    try:
        return run_query(cur, sql)
    except duckdb.Error as e:
        raise StoreError(f"query failed: {str(e).strip()}",
                         "tables: runs, spans, events, tool_calls, llm_calls, operations, files, "
                         "load_warnings (docs/store-schema.md)") from e
