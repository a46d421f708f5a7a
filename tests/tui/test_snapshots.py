"""Every screen at 80×24 against its golden SVG (and text), on the deterministic fixture bundle."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttrail.tui.app import make_app
from agenttrail.tui.screens.events import EventsView
from agenttrail.tui.screens.sql import SqlView

from .conftest import settle
from .snapshot import assert_snapshot

pytestmark = pytest.mark.anyio

SIZE = (80, 24)


async def test_overview(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert_snapshot(app, "overview")


async def test_timeline_at_first_evidence(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert_snapshot(app, "timeline")


async def test_events(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        app.query_one(EventsView).jump_to_seq(23)
        await settle(pilot)
        assert_snapshot(app, "events")


async def test_tools_grouped(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4", "i")
        await settle(pilot)
        assert_snapshot(app, "tools-grouped")


async def test_tools_by_latency(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4", "s")
        await settle(pilot)
        assert_snapshot(app, "tools")


async def test_sql(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("5")
        app.query_one(SqlView).clock = lambda: 0.0
        app.query_one(SqlView).run_sql("SELECT kind, count(*) AS spans, round(sum(duration_ms), 1) AS ms\n"
                                        "FROM spans GROUP BY kind ORDER BY spans DESC, kind")
        await settle(pilot)
        assert_snapshot(app, "sql")


async def test_help(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert_snapshot(app, "help")


async def test_run_picker(fixture_bundle: Path, second_bundle: Path) -> None:
    app = make_app([fixture_bundle, second_bundle])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.clear_notifications()
        await pilot.press("r")
        await pilot.pause()
        assert_snapshot(app, "run-picker")


async def test_error_modal(fixture_bundle: Path) -> None:
    app = make_app([fixture_bundle])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("5")
        app.query_one(SqlView).run_sql("SELECT * FROM no_such_table")
        await settle(pilot)
        assert_snapshot(app, "error")
