"""SQL console: run queries against the store; results in a virtual table; named queries from a picker."""

from __future__ import annotations

import time
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
from ..widgets.vtable import Column, VirtualTable

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


def result_columns(names: tuple[str, ...], width: int) -> list[Column]:
    if not names:
        return []
    each = max((width - len(names) + 1) // len(names), 6)
    cols = [Column(n, n, min(max(each, len(n)), 24)) for n in names]
    cols[-1] = Column(names[-1], names[-1])  # the last one takes what is left
    return cols


class SqlView(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r,f5", "run", "Run query", priority=True),
        Binding("escape", "leave_editor", "Leave editor"),
    ]

    ctx: RunContext | None = None

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
        started = time.perf_counter()
        in_thread(self.app, self.ctx.store, partial(_query_job, sql=sql),
                  partial(self._done, started), group="sql", description="SQL query")

    def _done(self, started: float, result: QueryResult) -> None:
        self.table.loading = False
        ms = (time.perf_counter() - started) * 1000
        self.table.set_source(result_columns(result.columns, self.table.size.width or 80),
                              ArrowSource(result))
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
