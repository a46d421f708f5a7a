"""The first screen does not wait for the detectors: "analysing…", then the findings; quit or crash meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Label, Static

from agenttrail.detect.finding import DetectorFailure, Finding
from agenttrail.store import Store
from agenttrail.tui.app import default_detect, make_app
from agenttrail.tui.screens.modals import ErrorModal
from agenttrail.tui.screens.timeline import TimelineView
from agenttrail.tui.widgets.vtable import VirtualTable

from .conftest import settle, settle_failed

pytestmark = pytest.mark.anyio


class GatedDetect:
    """The real detectors, held back until the test releases them (a big bundle's slow detectors)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.done = threading.Event()
        self.result: tuple[list[Finding], list[DetectorFailure]] | None = None

    def __call__(self, store: Store) -> tuple[list[Finding], list[DetectorFailure]]:
        try:
            if not self.release.wait(60):
                raise RuntimeError("the test never released the detectors")
            self.result = default_detect(store)
            return self.result
        finally:
            self.done.set()


async def _until(pilot: Pilot[int], condition: Callable[[], bool], what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"never happened: {what}")


async def _first_screen(pilot: Pilot[int]) -> None:
    await _until(pilot, lambda: getattr(pilot.app, "loaded_at", None) is not None, "the first screen")


def _running(app: object) -> set[str]:
    return {w.name for w in app.workers if w.is_running} - {"load"}  # type: ignore[attr-defined]


def _label(app: object, selector: str) -> str:
    return str(app.query_one(selector, Label).render())  # type: ignore[attr-defined]


async def test_first_screen_before_the_findings_then_they_fill_in(fixture_bundle: Path) -> None:
    gate = GatedDetect()
    app = make_app([fixture_bundle], detect=gate)
    async with app.run_test(size=(80, 24)) as pilot:
        await _first_screen(pilot)
        await pilot.pause()
        header = str(app.query_one("#run-header", Static).render())
        assert header.startswith(" FAILED  r_fixture")
        assert _label(app, "#findings-title") == "Findings · analysing…"
        findings = app.query_one("#findings", VirtualTable)
        assert findings.row_count == 0 and findings.empty_text.startswith("analysing…")
        assert app.ctx is not None and app.ctx.findings is None
        # nothing else competes with the detectors: the other tabs are read after them
        assert _running(app) == {"detectors"}
        assert app.query_one(TimelineView).trace is None

        gate.release.set()
        await settle(pilot)
        assert _label(app, "#findings-title") == "Findings (1)"
        assert findings.current is not None and findings.current[:2] == ("error", "retry_loop")
        assert app.analysed_at is not None and app.analysed_at >= app.loaded_at
        # then read ahead in the background: every tab is ready when opened
        assert app.query_one(TimelineView).trace is not None
        assert len(app.query_one(TimelineView).shown) == 45
        assert app.query_one("#event-table", VirtualTable).row_count == 75
        assert app.query_one("#tool-table", VirtualTable).row_count == 14


async def test_timeline_opened_early_is_marked_when_the_findings_arrive(fixture_bundle: Path) -> None:
    gate = GatedDetect()
    app = make_app([fixture_bundle], detect=gate)
    async with app.run_test(size=(80, 24)) as pilot:
        await _first_screen(pilot)
        await pilot.press("2")  # opening the tab reads the span tree at once
        timeline = app.query_one(TimelineView)
        await _until(pilot, lambda: timeline.trace is not None, "the span tree")
        assert timeline.trace is not None
        assert [n.span_id for n in timeline.trace.by_id.values() if n.flagged] == []

        gate.release.set()
        await settle(pilot)
        assert app.ctx is not None and app.ctx.findings is not None
        evidence = set(app.ctx.findings[0].evidence.span_ids)
        assert evidence
        assert {n.span_id for n in timeline.trace.by_id.values() if n.flagged} == evidence
        assert app.query_one("#spans", VirtualTable).row_count == 45


async def test_quit_while_the_detectors_run(fixture_bundle: Path) -> None:
    gate = GatedDetect()
    app = make_app([fixture_bundle], detect=gate)
    async with app.run_test(size=(80, 24)) as pilot:
        await _first_screen(pilot)
        await pilot.press("q")
    assert app.return_code == 0
    gate.release.set()
    assert gate.done.wait(30)
    # cancelled on quit: the detectors stop before the first one runs, and nothing is posted back
    assert gate.result == ([], [])
    assert app.analysed_at is None


async def test_detectors_crashing_leave_a_usable_screen(fixture_bundle: Path) -> None:
    def crash(_store: Store) -> tuple[list[Finding], list[DetectorFailure]]:
        raise ValueError("entry point agenttrail.detectors is broken")

    app = make_app([fixture_bundle], detect=crash)
    async with app.run_test(size=(80, 24)) as pilot:
        await _first_screen(pilot)
        await settle_failed(pilot)
        assert isinstance(app.screen, ErrorModal)
        assert app.screen.message == "ValueError: entry point agenttrail.detectors is broken"
        await pilot.press("enter")
        await settle(pilot)
        assert _label(app, "#findings-title") == "Findings (0) · 1 detector(s) failed: detectors"
        # the other tabs are read all the same
        assert app.query_one("#tool-table", VirtualTable).row_count == 14
