"""The agenttrail TUI: open bundles over SSH and find the failure in a minute.

``make_app(paths)`` is the one factory used by the CLI, the tests and the benchmark. The store is loaded
in a thread worker behind a progress screen; the first screen (the run summary) follows at once, the
detectors then run in a worker of their own and fill in the findings, and only after them the other tabs
read ahead (a tab opened earlier reads at once). Every later DuckDB read that can take long (materializing
a filtered million-row list, a search, a SQL query) also runs in a worker with its own cursor, and one
``Worker.StateChanged`` handler turns any error into an error modal (the Harlequin pattern).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import duckdb
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Label, ProgressBar, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from ..detect.finding import DetectorFailure, Finding
from ..errors import AgenttrailError
from ..store import Store
from ._text import literal
from .context import (
    JumpToEvidence,
    JumpToSeq,
    JumpToSpan,
    RunContext,
    ShowDetail,
    in_thread,
    worker_cancelled,
)
from .data import Cursor, RunInfo, prepare, runs
from .screens.events import EventsView
from .screens.modals import ErrorModal, HelpScreen, RunPicker
from .screens.overview import OverviewView
from .screens.sql import SqlView
from .screens.timeline import TimelineView
from .screens.tools import ToolsView
from .widgets.detail import DetailPane
from .widgets.vtable import VirtualTable

Progress = Callable[[str, int, int], None]
StoreLoader = Callable[[Sequence[Path], Progress], Store]
Detect = Callable[[Store], tuple[list[Finding], list[DetectorFailure]]]

TABS: tuple[tuple[str, str], ...] = (("overview", "Overview"), ("timeline", "Timeline"),
                                     ("events", "Events"), ("tools", "Tools"), ("sql", "SQL"))


def default_loader(paths: Sequence[Path], progress: Progress) -> Store:
    """Load through the store cache: a bundle opened before re-opens in about a second."""
    from ..store import open_store

    return open_store(paths, use_cache=True, progress=progress)


def fresh_loader(paths: Sequence[Path], progress: Progress) -> Store:
    from ..store import open_store

    return open_store(paths, progress=progress)


def default_detect(store: Store) -> tuple[list[Finding], list[DetectorFailure]]:
    """Every detector, one at a time: a cancelled worker (quit, another run) stops between detectors."""
    from ..detect import run_detectors
    from ..detect.finding import severity_rank
    from ..detect.registry import available

    findings: list[Finding] = []
    failures: list[DetectorFailure] = []
    for code in available():
        if worker_cancelled():
            break
        analysis = run_detectors(store, [code])
        findings.extend(analysis.findings)
        failures.extend(analysis.failures)
    findings.sort(key=lambda f: (-severity_rank(f.severity), f.bundle_id or 0, f.code))
    return findings, failures


class LoadingScreen(Screen[None]):
    """Shown while the worker loads the bundles: which step, how long so far."""

    STEPS: ClassVar[tuple[str, ...]] = ("loading bundles into DuckDB", "reading the run summary")

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.started = time.monotonic()

    def compose(self) -> ComposeResult:
        with Center(id="loading-box"):
            yield Label(f"agenttrail · opening {self.count} bundle{'s' if self.count != 1 else ''}",
                        id="loading-title")
            yield ProgressBar(total=len(self.STEPS), show_eta=False, id="loading-progress")
            yield Label("", id="loading-step")

    def on_mount(self) -> None:
        self.set_step(0)
        self.set_interval(0.5, self._tick)

    def set_step(self, step: int, what: str | None = None, fraction: float = 0.0) -> None:
        """Step ``step`` of STEPS; ``what`` and ``fraction`` detail the store's own loading steps."""
        self.step, self.what = step, what
        self.query_one(ProgressBar).progress = step + fraction
        self._tick()

    what: str | None = None

    def _tick(self) -> None:
        name = self.what or self.STEPS[min(self.step, len(self.STEPS) - 1)]
        self.query_one("#loading-step", Label).update(
            f"{name}… {time.monotonic() - self.started:.1f} s")


class AgentTrailApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "agenttrail"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help"),
        Binding("r", "pick_run", "Runs"),
        Binding("d", "toggle_detail", "Detail"),
        *[Binding(str(i), f"tab('{tab}')", label, show=False) for i, (tab, label) in enumerate(TABS, 1)],
    ]

    def __init__(self, paths: Sequence[Path], *, loader: StoreLoader = default_loader,
                 detect: Detect = default_detect) -> None:
        super().__init__()
        self.paths = list(paths)
        self.loader, self.detect = loader, detect
        self.store: Store | None = None
        self.ui_cursor: Any = None
        self.runs: list[RunInfo] = []
        self.findings: list[Finding] = []
        self.failures: list[DetectorFailure] = []
        self.ctx: RunContext | None = None
        self.startup_error: AgenttrailError | None = None
        self.loaded_at: float | None = None  # monotonic time the first screen became interactive
        self.analysed_at: float | None = None  # monotonic time the findings were shown
        self._load_worker: Worker[None] | None = None

    # -- layout ------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="titlebar")
        with Vertical(id="main"):
            with TabbedContent(id="tabs"):
                with TabPane("1 Overview", id="overview"):
                    yield OverviewView(id="overview-view")
                with TabPane("2 Timeline", id="timeline"):
                    yield TimelineView(id="timeline-view")
                with TabPane("3 Events", id="events"):
                    yield EventsView(id="events-view")
                with TabPane("4 Tools", id="tools"):
                    yield ToolsView(id="tools-view")
                with TabPane("5 SQL", id="sql"):
                    yield SqlView(id="sql-view")
            yield DetailPane(id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.push_screen(LoadingScreen(len(self.paths)))
        self._load_worker = self.run_worker(self._load, name="load", group="load", thread=True,
                                            exit_on_error=False, description="load bundles")

    # -- loading -------------------------------------------------------------------------------------------

    def _step(self, step: int, what: str | None = None, fraction: float = 0.0) -> None:
        if isinstance(self.screen, LoadingScreen):
            self.screen.set_step(step, what, fraction)

    def _load(self) -> None:
        def progress(what: str, i: int, n: int) -> None:
            self.call_from_thread(self._step, 0, what, min(i / n, 1.0) if n else 0.0)

        store = prepare(self.loader(self.paths, progress))
        self.call_from_thread(self._step, 1)
        run_list = runs(store.con)
        if not worker_cancelled():
            self.call_from_thread(self._loaded, store, run_list)

    def _loaded(self, store: Store, run_list: list[RunInfo]) -> None:
        """The first screen: the run summary at once; the findings follow when the detectors finish."""
        self.store, self.runs = store, run_list
        self.ui_cursor = store.con.cursor()  # the UI thread's own connection
        if isinstance(self.screen, LoadingScreen):
            self.pop_screen()
        if not run_list:
            self._error("No runs", "the bundles loaded but hold no run", "check the bundle with "
                        "`agenttrail bundle verify`")
            return
        first = next((r for r in run_list if (r.status or "") == "failed"), run_list[0])
        self.show_run(first.bundle_id)
        self.loaded_at = time.monotonic()
        if len(run_list) > 1:
            self.notify(f"{len(run_list)} runs loaded: r picks another", timeout=4)
        # the detectors get the machine first (findings are what the overview is for); the other tabs
        # are read after them, or as soon as one is opened
        in_thread(self, store, self._detect_job, self._analysed, group="detect", description="detectors")

    def _detect_job(self, cur: Cursor) -> tuple[list[Finding], list[DetectorFailure]]:
        assert self.store is not None
        return self.detect(dataclasses.replace(self.store, con=cur))

    def _analysed(self, result: tuple[list[Finding], list[DetectorFailure]]) -> None:
        self.findings, self.failures = result
        self.analysed_at = time.monotonic()
        if self.ctx is not None:
            self.ctx.findings = self._run_findings(self.ctx.run)
            self.ctx.failures = self.failures
            self.query_one(OverviewView).show_findings(self.ctx)
            self.query_one(TimelineView).mark_flagged(self.ctx.flagged_spans)
        self._prefetch()

    def _prefetch(self) -> None:
        """Read the other tabs in the background (each reads at once when opened before that)."""
        for view in (TimelineView, EventsView, ToolsView):
            self.query_one(view).ensure_loaded()

    def _run_findings(self, run: RunInfo) -> list[Finding] | None:
        if self.analysed_at is None:
            return None  # the detectors are still running
        return [f for f in self.findings if f.bundle_id in (run.bundle_id, None)
                and (f.bundle_id is not None or f.run_id == run.run_id)]

    def show_run(self, bundle_id: int) -> None:
        run = next(r for r in self.runs if r.bundle_id == bundle_id)
        assert self.store is not None
        ctx = RunContext(store=self.store, ui=self.ui_cursor, run=run, findings=self._run_findings(run),
                         failures=self.failures)
        self.ctx = ctx
        title = Text(" agenttrail ", style="bold reverse")
        title.append(" ")
        title.append_text(literal(run.run_id, style="bold"))
        if len(self.runs) > 1:
            idx = self.runs.index(run) + 1
            title.append(f"  run {idx} of {len(self.runs)} (r switches)", style="dim")
        self.query_one("#titlebar", Static).update(title)
        for view in (OverviewView, TimelineView, EventsView, ToolsView, SqlView):
            self.query_one(view).show_run(ctx)
        self.query_one(DetailPane).clear()
        self.action_tab("overview")
        if self.analysed_at is not None:
            self._prefetch()

    # -- errors ----------------------------------------------------------------------------------------------

    def _error(self, title: str, message: str, hint: str = "",
               then: Callable[[None], None] | None = None) -> None:
        self.push_screen(ErrorModal(title, message, hint), then)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        if isinstance(error, AgenttrailError):
            message, hint = error.message, error.hint
        else:
            message = f"{type(error).__name__}: {error}"
            hint = "this is a bug in agenttrail; please report it with the bundle's manifest.json"
        for table in self.query(VirtualTable):
            table.loading = False
        if event.worker is self._load_worker:
            self.startup_error = error if isinstance(error, AgenttrailError) else \
                AgenttrailError(message, hint)
            if isinstance(self.screen, LoadingScreen):
                self.pop_screen()
            self._error("Could not load the bundles", message, hint,
                        then=lambda _r: self.exit(2, return_code=2))
            return
        if event.worker.group == "sql":
            self.query_one(SqlView).query_failed()
        if event.worker.group == "detect":
            self._analysed(([], [DetectorFailure("detectors", message)]))
        self._error(f"{event.worker.description} failed", message, hint)

    # -- messages from the views -----------------------------------------------------------------------------

    @on(ShowDetail)
    def _show_detail(self, message: ShowDetail) -> None:
        tabs = self.query(TabbedContent)
        if tabs and message.view.id == f"{tabs.first().active}-view":  # no tabs: the app is closing
            self.query_one(DetailPane).show(message.title, message.sections)

    @on(JumpToSpan)
    def _jump_span(self, message: JumpToSpan) -> None:
        timeline = self.query_one(TimelineView)
        if timeline.jump_to_span(message.span_id):
            self.action_tab("timeline")
        else:
            self.notify(f"span {message.span_id} is not in the trace", timeout=3, severity="warning")

    @on(JumpToSeq)
    def _jump_seq(self, message: JumpToSeq) -> None:
        self.action_tab("events")
        self.query_one(EventsView).jump_to_seq(message.seq)

    @on(JumpToEvidence)
    def _jump_evidence(self, message: JumpToEvidence) -> None:
        ev = message.finding.evidence
        timeline = self.query_one(TimelineView)
        for span_id in ev.span_ids:
            if timeline.jump_to_span(span_id):
                self.action_tab("timeline")
                return
        if ev.event_seqs:
            self.post_message(JumpToSeq(ev.event_seqs[0]))
            return
        self.notify("this finding names no span or event", timeout=3)

    # -- actions ---------------------------------------------------------------------------------------------

    def action_tab(self, tab: str) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.active = tab
        self._focus_tab(tab)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id or ""
        view = {"timeline": TimelineView, "events": EventsView, "tools": ToolsView}.get(tab)
        if view is not None:
            self.query_one(view).ensure_loaded()
        self.query_one(DetailPane).display = tab != "sql" and not self._detail_hidden
        main = self.query_one("#main")
        for name, _label in TABS:
            main.set_class(name == tab, f"-tab-{name}")
        self._focus_tab(tab)

    _detail_hidden = False

    def _focus_tab(self, tab: str) -> None:
        if tab == "sql":
            self.query_one("#sql-editor").focus()
        else:
            self.query_one(f"#{tab}-view VirtualTable", VirtualTable).focus()
        table = self.focused
        if isinstance(table, VirtualTable) and table.row_count:
            table.cursor_row = table.cursor_row  # re-announce: the detail pane follows the tab

    def action_toggle_detail(self) -> None:
        self._detail_hidden = not self._detail_hidden
        pane = self.query_one(DetailPane)
        pane.display = not self._detail_hidden and self.query_one(TabbedContent).active != "sql"

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_pick_run(self) -> None:
        if not self.runs:
            return

        def chosen(bundle_id: int | None) -> None:
            if bundle_id is not None and (self.ctx is None or bundle_id != self.ctx.bundle_id):
                self.show_run(bundle_id)

        self.push_screen(RunPicker(self.runs, self.ctx.bundle_id if self.ctx else None), chosen)

    async def action_quit(self) -> None:
        self.exit(0)

    def on_unmount(self) -> None:
        gc.unfreeze()  # the span trees frozen by data.gc_deferred: collectable again
        if self.store is not None:
            # a worker may still be reading on its own cursor (quit while a big list materializes);
            # DuckDB then refuses to close, and the process is leaving anyway
            with contextlib.suppress(duckdb.Error):
                self.store.close()


def make_app(paths: Sequence[str | Path], *, loader: StoreLoader = default_loader,
             detect: Detect = default_detect) -> AgentTrailApp:
    """The TUI over ``paths`` (bundle directories or packed bundles); used by the CLI and the tests."""
    return AgentTrailApp([Path(p) for p in paths], loader=loader, detect=detect)
