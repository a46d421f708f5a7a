"""Hostile content from a bundle is shown literally: never interpreted as markup, escapes or links."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.style import Style

from agenttrail.tui._text import escape_controls, literal, literal_block, one_line
from agenttrail.tui.app import make_app
from agenttrail.tui.screens.events import EventsView
from agenttrail.tui.widgets.detail import DetailPane, pretty_json
from agenttrail.tui.widgets.vtable import VirtualTable

from .conftest import settle
from .fixture import HOSTILE_ERROR, LONG_LINE
from .snapshot import assert_snapshot

SPELLED = ("[bold red]npm ERR![/] [link=https://evil.example/x]click[/link] \\x1b[31mred\\x1b[0m "
           "\\x1b]8;;https://evil.example\\x1b\\osc8\\x1b]8;;\\x1b\\ bell\\x07 nul\\x00 rtl\\u202eevil")


def test_controls_are_spelled_out() -> None:
    assert escape_controls(HOSTILE_ERROR) == SPELLED
    assert one_line("a\nb\tc\r\nd\x9b") == "a⏎b c⏎d\\x9b"
    text = literal("[bold]x[/bold] \x1b[1m")
    assert text.plain == "[bold]x[/bold] \\x1b[1m" and text.spans == []
    block = literal_block("line1\n\x1b]8;;u\x07", limit=8)
    assert block.plain == "line1\n\\x1b]\n… 5 more characters not shown"


def test_pretty_json_keeps_markup_literal() -> None:
    text = pretty_json({"m": "[link=https://evil.example]x[/link]", "e": "\x1b[31m"})
    assert text.plain == '{\n  "m": "[link=https://evil.example]x[/link]",\n  "e": "\\u001b[31m"\n}'
    assert [s for s in text.spans if isinstance(s.style, Style) and s.style.link] == []


def _strip_text(table: VirtualTable, y: int) -> tuple[str, list[object]]:
    strip = table.render_line(y)
    return strip.text, [seg.style.link for seg in strip if seg.style is not None and seg.style.link]


@pytest.mark.anyio
async def test_hostile_bundle_renders_literally(hostile_bundle: Path) -> None:
    app = make_app([hostile_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        # tool calls: the error shown in the table cell, literally, with no link style anywhere
        await pilot.press("4", "s", "s")  # status: errors first
        await settle(pilot)
        tools = app.query_one("#tool-table", VirtualTable)
        line, links = _strip_text(tools, 1)
        assert line == "    12 03:04:05.014 run_command  error       20.0 [bold red]npm ERR![/] [link…"
        assert links == []
        assert "\x1b" not in line
        detail = app.query_one(DetailPane).plain_text(width=400)
        assert f"error\n{SPELLED}\n" in detail
        assert "\x1b" not in detail and "\x07" not in detail and "\u202e" not in detail
        # events: the error event's very long line is cut in the cell and shown in the detail pane
        await pilot.press("3")
        await settle(pilot)
        view = app.query_one(EventsView)
        view.jump_to_seq(75)
        await settle(pilot)
        events = app.query_one("#event-table", VirtualTable)
        assert events.current[2] == "error"
        detail = app.query_one(DetailPane).plain_text(width=6000)
        assert '"markup": "[link=https://evil.example]x[/link]"' in detail
        assert f'"long": "{LONG_LINE}"' in detail
        assert "\x1b" not in detail
        row_line, links = _strip_text(events, events.cursor_row - round(events.scroll_y) + 1)
        assert links == [] and len(row_line) == events.scrollable_content_region.width
        assert row_line.rstrip().endswith("…")
        # the screen as a whole: no hyperlink and no escape reached the terminal
        svg_screen = app.export_screenshot()
        assert "<a " not in svg_screen and "\x1b" not in svg_screen and "\u202e" not in svg_screen
        assert_snapshot(app, "hostile-events")
        # the timeline's span detail: the status message with its escapes spelled out
        await pilot.press("2", "e", "e")
        await settle(pilot)
        detail = app.query_one(DetailPane).plain_text(width=400)
        assert "rtl\\u202eevil" in detail and "\\x1b[31mred" in detail
