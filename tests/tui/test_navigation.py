"""Pilot tests: navigation, selection, filters, jumps (finding → evidence, event ↔ span), errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from agenttrail.tui.app import make_app
from agenttrail.tui.screens.events import EventsView
from agenttrail.tui.screens.modals import ErrorModal, HelpScreen, RunPicker
from agenttrail.tui.screens.timeline import TimelineView
from agenttrail.tui.screens.tools import ToolsView
from agenttrail.tui.widgets.detail import DetailPane
from agenttrail.tui.widgets.vtable import VirtualTable

from .conftest import settle, settle_failed

pytestmark = pytest.mark.anyio


def _detail_text(app) -> str:
    return app.query_one(DetailPane).plain_text()


async def test_overview_shows_run_and_finding(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "overview"
        assert app.ctx is not None and app.ctx.run.run_id == "r_fixture"
        assert app.ctx.run.status == "failed" and app.ctx.run.tool_calls == 14
        assert app.ctx.run.tool_errors == 5
        findings = app.query_one("#findings", VirtualTable)
        assert findings.has_focus and findings.row_count == 1
        assert findings.current is not None and findings.current[:2] == ("error", "retry_loop")
        detail = _detail_text(app)
        assert "error · retry_loop" in detail
        assert "3-command retry loop (4 iterations) after `npm install` failed" in detail


async def test_enter_on_finding_jumps_to_first_evidence_span(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        finding = app.ctx.findings[0]
        await pilot.press("enter")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "timeline"
        spans = app.query_one("#spans", VirtualTable)
        assert spans.has_focus
        node = spans.current[2]
        assert node.span_id == finding.evidence.span_ids[0]
        assert node.name == "execute_tool run_command" and node.failed and node.flagged
        assert "span · execute_tool run_command" in _detail_text(app)


async def test_finding_without_spans_jumps_to_its_first_event(fixture_bundle: Path) -> None:
    from agenttrail.detect.finding import Evidence, Finding
    from agenttrail.tui.context import JumpToEvidence

    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.post_message(JumpToEvidence(Finding("x", "info", "r_fixture", "s", Evidence([], [42]))))
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "events"
        events = app.query_one("#event-table", VirtualTable)
        assert events.current[0] == 42
        assert events.cursor_row == 41


async def test_timeline_next_error_collapse_and_filter(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        timeline = app.query_one(TimelineView)
        spans = app.query_one("#spans", VirtualTable)
        assert spans.row_count == 45  # every span, all expanded
        assert spans.current[2].name == "invoke_agent fixture-agent"
        await pilot.press("e")  # the root span failed too: the next error after it
        assert spans.current[2].name == "execute_tool run_command"
        first_error = spans.cursor_row
        await pilot.press("e")
        assert spans.current[2].failed and spans.cursor_row > first_error
        await pilot.press("E")
        assert spans.cursor_row == first_error
        await pilot.press("minus")  # collapse all below the root
        assert spans.row_count == 1 + 15  # root + its 15 nodes
        await pilot.press("home", "down", "enter")  # expand the first node (plan)
        assert spans.row_count == 17 and spans.current[2].name == "plan"
        await pilot.press("enter")
        assert spans.row_count == 16
        await pilot.press("plus", "f")  # filter: llm
        assert timeline.kind_filter == "llm"
        kinds = {spans.row(i)[2].kind for i in range(spans.row_count)}
        assert kinds == {"llm", "run", "node"}  # llm spans and their ancestors
        assert sum(spans.row(i)[2].kind == "llm" for i in range(spans.row_count)) == 15
        await pilot.press("f", "f", "f")  # tool, node, errors
        assert timeline.kind_filter == "errors"
        failed = [spans.row(i)[2] for i in range(spans.row_count)]
        assert [s.name for s in failed if s.failed].count("execute_tool run_command") == 5


async def test_events_filters_search_and_jump(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        view = app.query_one(EventsView)
        events = app.query_one("#event-table", VirtualTable)
        assert events.has_focus and events.row_count == 75
        view.set_filters("tool.finished", None)
        await settle(pilot)
        assert events.row_count == 14
        assert {events.row(i)[2] for i in range(14)} == {"tool.finished"}
        view.set_filters(None, "model")
        await settle(pilot)
        assert events.row_count == 15 and events.current[3] == "model"
        view.set_filters(None, None)
        await settle(pilot)
        # incremental search: typing moves to the first match at or after the cursor
        await pilot.press("slash")
        await pilot.press(*"ERESOLVE")
        await settle(pilot)
        first = events.current
        assert first[2] == "tool.finished" and "ERESOLVE" in first[5]
        await pilot.press("enter")  # next match
        await settle(pilot)
        assert events.current[0] > first[0] and "ERESOLVE" in events.current[5]
        await pilot.press("escape")  # leave the search box? focus the table
        events.focus()
        await pilot.press("N")
        await settle(pilot)
        assert events.current[0] == first[0]
        # jump to seq through the prompt
        await pilot.press("colon")
        await pilot.press(*"60", "enter")
        await settle(pilot)
        assert events.current[0] == 60 and events.cursor_row == 59


async def test_jump_to_seq_clears_a_filter_that_hides_it(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.query_one(EventsView)
        view.set_filters("model.call", None)
        await settle(pilot)
        view.jump_to_seq(1)
        await settle(pilot)
        events = app.query_one("#event-table", VirtualTable)
        assert events.row_count == 75 and events.current[0] == 1


async def test_event_links_to_its_span(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        events = app.query_one("#event-table", VirtualTable)
        events.move_to(6)  # seq 7: tool.started of read_file
        await pilot.pause()
        assert events.current[2] == "tool.started"
        span_id = events.current[4]
        assert '"call_id": "call_0001"' in _detail_text(app)
        await pilot.press("t")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "timeline"
        assert app.query_one("#spans", VirtualTable).current[2].span_id == span_id
        await pilot.press("v")  # and back: the span's first event
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "events"
        assert events.current[0] == 7


async def test_tools_sort_group_and_link(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        view = app.query_one(ToolsView)
        tools = app.query_one("#tool-table", VirtualTable)
        assert tools.row_count == 14
        assert tools.current[2] == "read_file"
        await pilot.press("s")  # latency: the 20 ms npm installs first
        await settle(pilot)
        assert view.sort == "latency"
        assert [tools.row(i)[4] for i in range(5)] == [20.0] * 5
        await pilot.press("s")  # status: errors first
        await settle(pilot)
        assert [tools.row(i)[3] for i in range(6)] == ["error"] * 5 + ["ok"]
        await pilot.press("i")  # group by identity
        await settle(pilot)
        assert tools.row_count == 4
        rows = [tools.row(i) for i in range(4)]
        assert [(r[0], r[2], r[3]) for r in rows] == [
            ("run_command", 5, 5), ("run_command", 4, 0), ("run_command", 4, 0), ("read_file", 1, 0)]
        assert '"npm install"' in rows[0][6]
        await pilot.press("i")
        await settle(pilot)
        tools.move_to(1)
        span_id = tools.current[8]
        await pilot.press("enter")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "timeline"
        assert app.query_one("#spans", VirtualTable).current[2].span_id == span_id


async def test_tools_header_click_sorts(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        tools = app.query_one("#tool-table", VirtualTable)
        # the header line: "   seq time         tool         status        ms ..."; "ms" ends at x=49
        await pilot.click("#tool-table", offset=(47, 0))
        await settle(pilot)
        assert app.query_one(ToolsView).sort == "latency"
        await pilot.click("#tool-table", offset=(2, 3))  # mouse selects the third row
        assert tools.cursor_row == 2


async def test_sql_console_named_query_and_error_modal(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await pilot.press("ctrl+r")
        await settle(pilot)
        results = app.query_one("#sql-results", VirtualTable)
        assert [c.key for c in results.columns] == ["tool", "status", "calls"]
        assert [results.row(i) for i in range(results.row_count)] == [
            ("run_command", "ok", 8), ("run_command", "error", 5), ("read_file", "ok", 1)]
        from textual.widgets import Select

        app.query_one("#named-query", Select).value = "tool_latency"
        await settle(pilot)
        assert [c.key for c in results.columns][:4] == ["run_id", "tool", "calls", "errors"]
        assert results.row(0)[:4] == ("r_fixture", "run_command", 13, 5)
        from agenttrail.tui.screens.sql import SqlView

        app.query_one(SqlView).run_sql("SELECT nope FROM spans")
        await settle(pilot)
        assert isinstance(app.screen, ErrorModal)
        assert "query failed" in app.screen.message and "nope" in app.screen.message
        await pilot.press("escape")
        assert not isinstance(app.screen, ErrorModal)


async def test_help_quit_and_detail_toggle(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("d")
        assert not app.query_one(DetailPane).display
        await pilot.press("d")
        assert app.query_one(DetailPane).display
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_run_picker_switches_runs(fixture_bundle: Path, second_bundle: Path) -> None:
    app = make_app([fixture_bundle, second_bundle])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert [r.bundle_id for r in app.runs] == [1, 2]
        assert app.ctx.bundle_id == 1 and len(app.ctx.findings) == 1
        await pilot.press("r")
        assert isinstance(app.screen, RunPicker)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert app.ctx.bundle_id == 2 and app.ctx.findings == []
        assert app.query_one("#findings", VirtualTable).row_count == 0
        await pilot.press("4")
        await settle(pilot)
        assert app.query_one("#tool-table", VirtualTable).row_count == 2


async def test_load_failure_shows_modal_then_exits_2(tmp_path: Path) -> None:
    from agenttrail.errors import StoreError

    def broken(_paths, _progress):
        raise StoreError("x.jsonl:3: could not load", "run `agenttrail bundle verify`")

    app = make_app([tmp_path], loader=broken)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle_failed(pilot)
        assert isinstance(app.screen, ErrorModal)
        assert app.screen.message == "x.jsonl:3: could not load"
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_code == 2
    assert app.startup_error is not None and app.startup_error.message == "x.jsonl:3: could not load"


async def test_store_reopened_from_the_read_only_cache(fixture_bundle: Path, tmp_path: Path) -> None:
    from agenttrail.store import open_store

    open_store([fixture_bundle], use_cache=True, cache_dir=tmp_path, cache_min_seconds=0).close()
    opened = []

    def cached(paths, progress):
        store = open_store(paths, use_cache=True, cache_dir=tmp_path, progress=progress)
        opened.append(store.from_cache)
        return store

    app = make_app([fixture_bundle], loader=cached)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert opened == [True]
        assert app.ctx.run.tool_calls == 14 and len(app.ctx.findings) == 1
        await pilot.press("3")
        await settle(pilot)
        assert app.query_one("#event-table", VirtualTable).row_count == 75
        await pilot.press("4", "i")
        await settle(pilot)
        assert app.query_one("#tool-table", VirtualTable).row_count == 4
