"""Tool calls: sortable by time, latency, status, tool; grouped by identity to see repeats."""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from .._text import literal
from ..context import JumpToSpan, RunContext, ShowDetail, in_thread
from ..data import TOOL_SORTS, Cursor, View, tool_call_detail, tool_calls_view, tool_groups_view
from ..widgets.detail import fields_table, pretty_json
from ..widgets.vtable import Column, ListSource, Row, VirtualTable
from .events import ViewSource

STATUS_STYLE = {"error": "bold red", "unfinished": "yellow", "ok": "green"}
SORTS = tuple(TOOL_SORTS)


def _args_or_error(_value: Any, row: Row, _width: int) -> Text:
    """The arguments, or the error when the call failed: what the eye needs in one column."""
    failed = row[3] == "error"
    return literal(row[7] if failed and row[7] else row[6] or "", style="red" if failed else "")


CALL_COLUMNS = (
    Column("seq", "seq", 6, align="right"),
    Column("ts", "time", 12),
    Column("tool", "tool", 12),
    Column("status", "status", 7, style=lambda v, _r: STATUS_STYLE.get(str(v), "")),
    Column("latency_ms", "ms", 8, align="right"),
    Column("input_hash", "hash", 0),
    Column("arguments", "arguments / error", render=_args_or_error),
    Column("error", "error", 0),
    Column("span_id", "span", 0),
    Column("call_id", "call", 0),
    Column("exit_code", "exit", 0),
)
SORT_BY_COLUMN = {"seq": "time", "ts": "time", "tool": "tool", "status": "status", "latency_ms": "latency"}

GROUP_COLUMNS = (
    Column("tool", "tool", 12),
    Column("input_hash", "hash", 16),
    Column("calls", "calls", 5, align="right",
           style=lambda v, _r: "bold yellow" if int(v or 0) >= 3 else ""),
    Column("errors", "fail", 4, align="right", style=lambda v, _r: "red" if v else ""),
    Column("total_ms", "total ms", 9, align="right"),
    Column("first_seq", "seq", 0),
    Column("arguments", "arguments"),
    Column("span_id", "span", 0),
)


class ToolsView(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "Sort"),
        Binding("i", "toggle_group", "Group by identity"),
        Binding("t", "span", "Span", show=False),
    ]

    ctx: RunContext | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sort = "time"
        self.grouped = False
        self.view: View | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="tools-bar", classes="toolbar")
        yield VirtualTable(id="tool-table", empty_text="no tool calls in this run")

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#tool-table", VirtualTable)

    def show_run(self, ctx: RunContext) -> None:
        """Take the run; its calls are read by ``ensure_loaded`` (tab opened, or after the detectors)."""
        self.ctx, self.view, self._requested = ctx, None, False
        self.sort, self.grouped = "time", False
        self.table.set_source(CALL_COLUMNS, ListSource([]))
        self.table.loading = True
        self._update_bar()

    _requested = False

    def ensure_loaded(self) -> None:
        if self.ctx is not None and not self._requested:
            self._requested = True
            self._load()

    def _load(self) -> None:
        ctx = self.ctx
        if ctx is None:
            return
        self._requested = True
        self.table.loading = True
        job = partial(_groups_job, bundle_id=ctx.bundle_id) if self.grouped else \
            partial(_calls_job, bundle_id=ctx.bundle_id, sort=self.sort)
        in_thread(self.app, ctx.store, job, self._loaded, group="tools-view", description="tool calls")

    def _loaded(self, view: View) -> None:
        if self.ctx is None:
            return
        self.view = view
        self.table.loading = False
        self.table.set_source(GROUP_COLUMNS if self.grouped else CALL_COLUMNS, ViewSource(self.ctx.ui, view))
        self._update_bar()

    def _update_bar(self) -> None:
        t = Text(end="")
        if self.grouped:
            t.append("grouped by identity", style="reverse")
            t.append(f"  {self.view.count if self.view else 0:,} identities · most repeated first",
                     style="dim")
            t.append("   i: list calls", style="dim")
        else:
            t.append("sort ", style="bold")
            for s in SORTS:
                t.append(f" {s} ", style="reverse" if s == self.sort else "dim")
            t.append(f"  {self.view.count if self.view else 0:,} calls", style="dim")
            t.append("   s: sort · i: group", style="dim")
        self.query_one("#tools-bar", Static).update(t)

    def set_sort(self, sort: str) -> None:
        self.sort, self.grouped = sort, False
        self._load()

    def action_cycle_sort(self) -> None:
        self.set_sort(SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)])

    def action_toggle_group(self) -> None:
        self.grouped = not self.grouped
        self._load()

    def on_virtual_table_header_clicked(self, event: VirtualTable.HeaderClicked) -> None:
        event.stop()
        sort = SORT_BY_COLUMN.get(event.column.key)
        if sort and not self.grouped:
            self.set_sort(sort)

    def action_span(self) -> None:
        row = self.table.current
        if row is None:
            return
        span = self.table.value(row, "span_id")
        if span:
            self.post_message(JumpToSpan(str(span)))
        else:
            self.app.notify("this call has no span in the trace", timeout=2)

    def on_virtual_table_selected(self, event: VirtualTable.Selected) -> None:
        event.stop()
        self.action_span()

    def on_virtual_table_highlighted(self, event: VirtualTable.Highlighted) -> None:
        event.stop()
        if self.ctx is None or event.row is None:
            return
        row = event.row
        if self.grouped:
            self.post_message(ShowDetail(self, f"{row[2]} calls of {row[0]} #{row[1] or ''}", [
                ("", fields_table({"tool": row[0], "input_hash": row[1] or "", "calls": row[2],
                                   "failed": row[3], "total": f"{row[4] or 0:,.1f} ms",
                                   "first seq": row[5] if row[5] is not None else ""})),
                ("arguments", pretty_json(row[6]) if row[6] else Text("not captured", style="dim"))]))
            return
        d = tool_call_detail(self.ctx.ui, self.ctx.bundle_id, row[8], row[9], row[0])
        if d is None:
            return
        head = {k: d.get(k) for k in ("tool", "status", "latency_ms", "exit_code", "error_type", "input_hash",
                                     "call_id", "span_id", "seq_start", "seq_end", "source")
                if d.get(k) is not None}
        sections: list[tuple[str, Any]] = [("", fields_table(head))]
        if d.get("error"):
            sections.append(("error", pretty_json(str(d["error"]))))
        sections.append(("arguments", pretty_json(d["arguments"]) if d.get("arguments") is not None
                         else Text("not captured (content capture off)", style="dim")))
        if d.get("linked_events"):
            sections.append(("events", fields_table({str(e["seq"]): e["type"] for e in d["linked_events"]})))
        self.post_message(ShowDetail(self, f"tool call · {d.get('tool')}", sections))


def _calls_job(cur: Cursor, *, bundle_id: int, sort: str) -> View:
    return tool_calls_view(cur, bundle_id, sort)


def _groups_job(cur: Cursor, *, bundle_id: int) -> View:
    return tool_groups_view(cur, bundle_id)
