"""A virtual table: renders only the visible rows, fetched by window from a ``RowSource``.

Textual's DataTable builds every row up front (about 18 s for 100k rows on a small machine); this widget
asks its source for the rows on screen only, through a small LRU cache of pages, so a million-row table
opens at once and a page-down costs one indexed DuckDB read. Built on the Line API (``render_line``).
Cells are untrusted text and rendered literally (see ``agenttrail.tui._text``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal, Protocol

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from .._text import one_line

Row = Sequence[Any]


class RowSource(Protocol):
    """Where the rows live. ``fetch`` is called from the UI thread with small windows only."""

    def count(self) -> int: ...

    def fetch(self, offset: int, limit: int) -> Sequence[Row]: ...


class ListSource:
    """Rows already in memory (span trees, small results)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = rows

    def count(self) -> int:
        return len(self.rows)

    def fetch(self, offset: int, limit: int) -> Sequence[Row]:
        return self.rows[offset:offset + limit]


def format_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, datetime):
        return value.strftime("%H:%M:%S.%f")[:-3]
    return one_line(value)


CellRenderer = Callable[[Any, Row, int], Text]


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int | None = None  # None: shares the width left over by the fixed columns
    align: Literal["left", "right"] = "left"
    fmt: Callable[[Any], str] = format_value
    style: Callable[[Any, Row], str] | None = None
    render: CellRenderer | None = None  # a custom cell (e.g. a waterfall bar) of exactly `width` cells


class VirtualTable(ScrollView, can_focus=True):
    """Rows from a ``RowSource``; a header line; a cursor row; Enter selects."""

    PAGE: ClassVar[int] = 128
    MAX_PAGES: ClassVar[int] = 32

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown,space", "page(1)", "Page down", show=False),
        Binding("home,g", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
        Binding("enter", "select", "Open", show=True),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "vtable--header", "vtable--cursor", "vtable--cursor-blurred", "vtable--empty"}

    DEFAULT_CSS = """
    VirtualTable { overflow-x: hidden; overflow-y: auto; height: 1fr; }
    VirtualTable > .vtable--header { text-style: bold; background: $panel; color: $text; }
    VirtualTable > .vtable--cursor { background: $block-cursor-background; color: $block-cursor-foreground;
                                     text-style: $block-cursor-text-style; }
    VirtualTable > .vtable--cursor-blurred { background: $block-cursor-blurred-background;
                                             text-style: $block-cursor-blurred-text-style; }
    VirtualTable > .vtable--empty { color: $text-muted; text-style: italic; }
    """

    cursor_row: reactive[int] = reactive(0, always_update=True, repaint=False)

    class RowMessage(Message):
        def __init__(self, table: VirtualTable, index: int, row: Row | None) -> None:
            super().__init__()
            self.table, self.index, self.row = table, index, row

        @property
        def control(self) -> VirtualTable:
            return self.table

    class Highlighted(RowMessage):
        """The cursor moved to ``index``."""

    class Selected(RowMessage):
        """Enter (or a second click) on ``index``."""

    class HeaderClicked(Message):
        def __init__(self, table: VirtualTable, column: Column) -> None:
            super().__init__()
            self.table, self.column = table, column

        @property
        def control(self) -> VirtualTable:
            return self.table

    def __init__(self, *, empty_text: str = "no rows", id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns: list[Column] = []
        self.source: RowSource = ListSource([])
        self.empty_text = empty_text
        self.row_style: Callable[[Row], str] | None = None
        self.marked: Callable[[Row], bool] | None = None
        self._count = 0
        self._pages: OrderedDict[int, Sequence[Row]] = OrderedDict()
        self.fetches = 0  # windows read from the source (for tests and the benchmark)

    # -- data -------------------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return self._count

    def set_source(self, columns: Sequence[Column], source: RowSource, cursor: int = 0) -> None:
        self.columns = list(columns)
        self.source = source
        self._pages.clear()
        self._count = source.count()
        self.virtual_size = Size(self.size.width, self._count + 1)
        self.scroll_to(y=0, animate=False, immediate=True)
        self.cursor_row = min(max(cursor, 0), max(self._count - 1, 0))
        self.refresh()

    def row(self, index: int) -> Row | None:
        if not 0 <= index < self._count:
            return None
        page, at = divmod(index, self.PAGE)
        rows = self._pages.get(page)
        if rows is None:
            rows = self.source.fetch(page * self.PAGE, self.PAGE)
            self.fetches += 1
            self._pages[page] = rows
            while len(self._pages) > self.MAX_PAGES:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(page)
        return rows[at] if at < len(rows) else None

    @property
    def current(self) -> Row | None:
        return self.row(self.cursor_row)

    def value(self, row: Row | None, key: str) -> Any:
        if row is None:
            return None
        for i, c in enumerate(self.columns):
            if c.key == key:
                return row[i] if i < len(row) else None
        raise KeyError(key)

    # -- cursor -----------------------------------------------------------------------------------------

    @property
    def _body_height(self) -> int:
        return max(self.scrollable_content_region.height - 1, 1)

    def watch_cursor_row(self, old: int, new: int) -> None:
        self._scroll_into_view()
        self.refresh()
        self.post_message(self.Highlighted(self, new, self.row(new)))

    _scroll_pending = False

    def _scroll_into_view(self) -> None:
        if self.scrollable_content_region.height <= 1:
            # not laid out yet (a tab never shown): scroll when it gets its size, not to a guessed height
            self._scroll_pending = True
            return
        self._scroll_pending = False
        top = round(self.scroll_y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + self._body_height:
            self.scroll_to(y=self.cursor_row - self._body_height + 1, animate=False, immediate=True)

    def move_to(self, index: int) -> None:
        """Put the cursor on ``index`` (clamped), scrolled into view."""
        if self._count:
            self.cursor_row = min(max(index, 0), self._count - 1)

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        step = self._body_height * direction
        self.scroll_to(y=self.scroll_y + step, animate=False, immediate=True)
        self.move_to(self.cursor_row + step)

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(self._count - 1)

    def action_select(self) -> None:
        if self._count:
            self.post_message(self.Selected(self, self.cursor_row, self.current))

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            col = self._column_at(event.x)
            if col is not None:
                self.post_message(self.HeaderClicked(self, col))
            return
        index = round(self.scroll_y) + event.y - 1
        if 0 <= index < self._count:
            if index == self.cursor_row and event.chain >= 2:
                self.action_select()
            self.move_to(index)

    # -- rendering --------------------------------------------------------------------------------------

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, self._count + 1)
        if self._scroll_pending:
            self._scroll_into_view()

    def _widths(self, total: int) -> list[int]:
        shown = [c for c in self.columns if c.width != 0]  # width 0: kept in the row, not displayed
        fixed = sum(c.width or 0 for c in shown) + max(len(shown) - 1, 0)
        flex = [c for c in self.columns if c.width is None]
        spare = max(total - fixed, 0)
        out: list[int] = []
        for c in self.columns:
            if c.width is not None:
                out.append(c.width)
            else:
                share = spare // len(flex)
                out.append(max(share + (spare % len(flex) if c is flex[-1] else 0), 0))
        return out

    def _column_at(self, x: int) -> Column | None:
        pos = 0
        for c, w in zip(self.columns, self._widths(self.scrollable_content_region.width), strict=True):
            if w <= 0:
                continue
            if pos <= x < pos + w + 1:
                return c
            pos += w + 1
        return None

    def _cells(self, values: Sequence[Any] | None, widths: list[int], header: bool) -> Text:
        line = Text(no_wrap=True, end="")
        first = True
        for i, (c, w) in enumerate(zip(self.columns, widths, strict=True)):
            if w <= 0:
                continue
            if not first:
                line.append(" ")
            first = False
            value = values[i] if values is not None and i < len(values) else None
            if header:
                cell = Text(c.label, no_wrap=True, end="")
            elif c.render is not None and values is not None:
                cell = c.render(value, values, w)
            else:
                cell = Text(c.fmt(value), no_wrap=True, end="",
                            style=c.style(value, values) if c.style and values is not None else "")
            cell.truncate(w, overflow="ellipsis", pad=False)
            if c.align == "right":
                cell.pad_left(w - cell.cell_len)
            else:
                cell.pad_right(w - cell.cell_len)
            line.append_text(cell)
        return line

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        widths = self._widths(width)
        if y == 0:
            style = self.get_component_rich_style("vtable--header")
            text = self._cells(None, widths, header=True)
            return self._strip(text, width, base + style)
        index = round(self.scroll_y) + y - 1
        if self._count == 0:
            if y == 1:
                return self._strip(Text(one_line(self.empty_text), end=""), width,
                                   base + self.get_component_rich_style("vtable--empty"))
            return Strip.blank(width, base)
        row = self.row(index)
        if row is None:
            return Strip.blank(width, base)
        style = base
        if self.row_style is not None:
            extra = self.row_style(row)
            if extra:
                style = style + Style.parse(extra)
        text = self._cells(row, widths, header=False)
        if index == self.cursor_row:
            cursor = "vtable--cursor" if self.has_focus else "vtable--cursor-blurred"
            style = style + self.get_component_rich_style(cursor)
        return self._strip(text, width, style)

    def _strip(self, text: Text, width: int, style: Style) -> Strip:
        segments = [Segment(s.text, style + s.style if s.style else style)
                    for s in text.render(self.app.console) if s.text]
        return Strip(segments).adjust_cell_length(width, style)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
