"""Events: the event log as a virtual table; filter by type and actor, incremental search, jump to seq."""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Select

from ..context import JumpToSpan, RunContext, ShowDetail, in_thread
from ..data import Cursor, View, event_detail, event_facets, events_view, fetch_window, row_of_seq, search
from ..widgets.detail import fields_table, pretty_json
from ..widgets.vtable import Column, ListSource, Row, VirtualTable
from .modals import SeqPrompt

TYPE_STYLE = {"error": "bold #ff5f5f", "tool.finished": "#56b6c2", "tool.started": "#56b6c2", "model.call": "#b48ead",
              "run.finished": "bold", "run.started": "bold"}


class ViewSource:
    """A materialized DuckDB view read by window on the UI thread's cursor."""

    def __init__(self, con: Cursor, view: View) -> None:
        self.con, self.view = con, view

    def count(self) -> int:
        return self.view.count

    def fetch(self, offset: int, limit: int) -> list[tuple[Any, ...]]:
        return fetch_window(self.con, self.view, offset, limit)


def _data_style(_value: Any, row: Row) -> str:
    return "red" if row[2] == "error" or '"status":"error"' in str(row[5] or "") else ""


EVENT_COLUMNS = (
    Column("seq", "seq", 7, align="right"),
    Column("ts", "time", 12),
    Column("type", "type", 18, style=lambda v, _r: TYPE_STYLE.get(str(v), "")),
    Column("actor", "actor", 7),
    Column("span_id", "span", 0),  # kept in the row for links; not shown
    Column("data", "data", style=_data_style),
)


class EventsView(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search"),
        Binding("n", "find(1)", "Next match", show=False),
        Binding("N", "find(-1)", "Prev match", show=False),
        Binding("colon", "jump_seq", "Jump to seq"),
        Binding("t", "span", "Span", show=False),
    ]

    ctx: RunContext | None = None
    view: View | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._pending_seq: int | None = None
        self._filters: tuple[str | None, str | None] = (None, None)

    def compose(self) -> ComposeResult:
        with Horizontal(classes="toolbar"):
            yield Select[str]([], prompt="type: all", compact=True, id="event-type")
            yield Select[str]([], prompt="actor: all", compact=True, id="event-actor")
            yield Input(placeholder="/ search", compact=True, id="event-search")
            yield Label("", id="event-count")
        yield VirtualTable(id="event-table", empty_text="no events match")

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#event-table", VirtualTable)

    def on_mount(self) -> None:
        self.query_one("#event-search", Input).cursor_blink = False

    def show_run(self, ctx: RunContext) -> None:
        """Take the run; its events are read by ``ensure_loaded`` (tab opened, or after the detectors)."""
        self.ctx = ctx
        self.view = None
        self._requested = False
        self._filters = (None, None)
        self.table.set_source(EVENT_COLUMNS, ListSource([]))
        self.table.loading = True
        self._update_count()

    _requested = False

    def ensure_loaded(self) -> None:
        """Read the filter choices and materialize the run's events in a worker (once per run)."""
        ctx = self.ctx
        if ctx is None or self._requested:
            return
        self._requested = True
        in_thread(self.app, ctx.store, partial(_facets_job, bundle_id=ctx.bundle_id), self._facets,
                  group="events-facets", description="event types")
        self._load()

    def _facets(self, facets: tuple[list[str], list[str]]) -> None:
        types, actors = facets
        with self.prevent(Select.Changed):
            self.query_one("#event-type", Select).set_options([(t, t) for t in types])
            self.query_one("#event-actor", Select).set_options([(a, a) for a in actors])

    def _load(self) -> None:
        ctx = self.ctx
        if ctx is None:
            return
        type_, actor = self._filters
        self.table.loading = True
        in_thread(self.app, ctx.store, partial(_events_view, bundle_id=ctx.bundle_id, type_=type_,
                                               actor=actor),
                  self._loaded, group="events-view", description="filter events")

    def _loaded(self, view: View) -> None:
        if self.ctx is None:
            return
        self.view = view
        self.table.loading = False
        self.table.set_source(EVENT_COLUMNS, ViewSource(self.ctx.ui, view))
        self._update_count()
        if self._pending_seq is not None:
            seq, self._pending_seq = self._pending_seq, None
            self.jump_to_seq(seq)

    def _update_count(self) -> None:
        n = self.view.count if self.view else 0
        self.query_one("#event-count", Label).update(Text(f"{n:,} events", style="dim"))

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        t = self.query_one("#event-type", Select).value
        a = self.query_one("#event-actor", Select).value
        self._filters = (t if isinstance(t, str) else None, a if isinstance(a, str) else None)
        self._load()

    def set_filters(self, type_: str | None, actor: str | None) -> None:
        """Filter by event type and actor (None: all); the same as choosing them in the toolbar."""
        with self.prevent(Select.Changed):
            self.query_one("#event-type", Select).value = type_ if type_ else Select.NULL
            self.query_one("#event-actor", Select).value = actor if actor else Select.NULL
        self._filters = (type_, actor)
        self._load()

    # -- jumps and search ---------------------------------------------------------------------------------

    def jump_to_seq(self, seq: int) -> None:
        """Put the cursor on event ``seq`` (or the next one shown); clears filters hiding it."""
        if self.ctx is None:
            return
        if self.view is None:
            self._pending_seq = seq
            self.ensure_loaded()
            return
        index = row_of_seq(self.ctx.ui, self.view, seq)
        row = self.table.row(index) if index is not None else None
        if (row is None or row[0] != seq) and self._filters != (None, None):
            self._pending_seq = seq
            self.set_filters(None, None)
            return
        if index is None:
            self.app.notify(f"no event at or after seq {seq}", timeout=3)
            return
        self.table.move_to(index)

    def action_jump_seq(self) -> None:
        def chosen(seq: int | None) -> None:
            if seq is not None:
                self.jump_to_seq(seq)
                self.table.focus()

        self.app.push_screen(SeqPrompt(), chosen)

    def action_search(self) -> None:
        self.query_one("#event-search", Input).focus()

    def _search(self, text: str, start: int, direction: int) -> None:
        ctx, view = self.ctx, self.view
        if ctx is None or view is None or not text:
            return
        in_thread(self.app, ctx.store,
                  partial(_search_job, view=view, text=text, start=start, backwards=direction < 0),
                  partial(self._found, text), group="events-search", description="search events")

    def _found(self, text: str, index: int | None) -> None:
        if index is None:
            self.app.notify(f"no event contains {text!r}", timeout=2, severity="warning")
            return
        self.table.move_to(index)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        # incremental: the first match at or after the cursor, as you type
        self._search(event.value, self.table.cursor_row - 1, 1)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._search(event.value, self.table.cursor_row, 1)

    def action_find(self, direction: int) -> None:
        text = self.query_one("#event-search", Input).value
        if not text:
            self.action_search()
            return
        self._search(text, self.table.cursor_row, direction)

    def action_span(self) -> None:
        row = self.table.current
        if row is not None and row[4]:
            self.post_message(JumpToSpan(str(row[4])))

    # -- detail -------------------------------------------------------------------------------------------

    def on_virtual_table_selected(self, event: VirtualTable.Selected) -> None:
        event.stop()
        self.action_span()

    def on_virtual_table_highlighted(self, event: VirtualTable.Highlighted) -> None:
        event.stop()
        if self.ctx is None or event.row is None:
            return
        d = event_detail(self.ctx.ui, self.ctx.bundle_id, int(event.row[0]))
        if d is None:
            return
        head: dict[str, Any] = {"seq": d["seq"], "time": d["ts"], "type": d["type"], "actor": d["actor"] or ""}
        if d["lineno"] is not None:
            head["line"] = f"events.jsonl:{d['lineno']}"
        if d["span_id"]:
            head["span"] = f"{d['span_name'] or '(not in trace)'} · {d['span_id']}" + \
                (" (t jumps)" if d["span_name"] else "")
        if d["payload_ref"]:
            head["payload_ref"] = d["payload_ref"]
        if d["redaction"]:
            head["redaction"] = d["redaction"]
        self.post_message(ShowDetail(self, f"event {d['seq']} · {d['type']}", [
            ("", fields_table(head)), ("data", pretty_json(d["data"]))]))


def _facets_job(cur: Cursor, *, bundle_id: int) -> tuple[list[str], list[str]]:
    return event_facets(cur, bundle_id)


def _events_view(cur: Cursor, *, bundle_id: int, type_: str | None, actor: str | None) -> View:
    return events_view(cur, bundle_id, type_, actor)


def _search_job(cur: Cursor, *, view: View, text: str, start: int, backwards: bool) -> int | None:
    return search(cur, view, text, start, backwards)
