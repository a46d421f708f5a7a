"""What the views are given (attributes down) and what they ask for (messages up)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rich.console import RenderableType
from textual.app import App
from textual.message import Message
from textual.widget import Widget
from textual.worker import NoActiveWorker, Worker, get_current_worker

from ..detect.finding import DetectorFailure, Finding
from ..store import Store
from .data import Cursor, RunInfo

T = TypeVar("T")


@dataclass
class RunContext:
    """The run the views show. ``ui`` is the UI thread's own cursor; workers open theirs.

    ``findings`` is None while the detectors are still running (the first screen does not wait for them).
    """

    store: Store
    ui: Cursor
    run: RunInfo
    findings: list[Finding] | None = None
    failures: list[DetectorFailure] = field(default_factory=list[DetectorFailure])

    @property
    def bundle_id(self) -> int:
        return self.run.bundle_id

    @property
    def flagged_spans(self) -> set[str]:
        return {s for f in self.findings or [] for s in f.evidence.span_ids}


def worker_cancelled() -> bool:
    """In a worker thread: has the worker been cancelled (quit, a newer request)? Outside one: False."""
    try:
        return get_current_worker().is_cancelled
    except NoActiveWorker:
        return False


def in_thread(app: App[Any], store: Store, fn: Callable[[Cursor], T], done: Callable[[T], None], *,
              group: str, description: str) -> Worker[None]:
    """Run ``fn`` on a thread with its own DuckDB cursor; ``done(result)`` on the UI thread.

    Exclusive per group: a newer request (another filter, another keystroke) cancels the older one,
    whose result is then dropped. Errors surface through the app's one ``Worker.StateChanged`` handler.
    """

    def job() -> None:
        cur = store.con.cursor()
        try:
            result = fn(cur)
        finally:
            cur.close()
        if not worker_cancelled():
            app.call_from_thread(done, result)

    return app.run_worker(job, name=description, group=group, thread=True, exclusive=True,
                          exit_on_error=False, description=description)


class ShowDetail(Message):
    """Show an item in the detail pane; ``view`` is the tab's view (only the active tab's is shown)."""

    def __init__(self, view: Widget, title: str, sections: Sequence[tuple[str, RenderableType]]) -> None:
        super().__init__()
        self.view, self.title, self.sections = view, title, sections


class JumpToSpan(Message):
    def __init__(self, span_id: str) -> None:
        super().__init__()
        self.span_id = span_id


class JumpToSeq(Message):
    def __init__(self, seq: int) -> None:
        super().__init__()
        self.seq = seq


class JumpToEvidence(Message):
    def __init__(self, finding: Finding) -> None:
        super().__init__()
        self.finding = finding
