"""Modal screens: help, errors, the run picker and the jump-to-seq prompt."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from .._text import literal, literal_block
from ..data import RunInfo

HELP: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Everywhere", (
        ("1 … 5", "Overview · Timeline · Events · Tools · SQL"),
        ("tab / shift+tab", "move focus"),
        ("r", "pick another run (several bundles)"),
        ("d", "show / hide the detail pane"),
        ("?", "this help"),
        ("q", "quit"),
    )),
    ("Tables", (
        ("↑ ↓ j k", "move"),
        ("pgup pgdn", "page"),
        ("home end g G", "first / last row"),
        ("enter / click", "open: jump to evidence, expand a span, follow a link"),
        ("click a header", "sort by that column (Tools)"),
    )),
    ("Overview", (("enter", "jump to the finding's evidence (spans, else events)"),)),
    ("Timeline", (
        ("enter / space", "expand or collapse the span"),
        ("+ / -", "expand all / collapse all"),
        ("e / E", "next / previous error"),
        ("l", "next span named in a finding (the loop)"),
        ("f", "filter by kind: all, llm, tool, node, errors"),
        ("v", "show the span's events"),
    )),
    ("Events", (
        ("/", "incremental search (enter: next match)"),
        ("n / N", "next / previous match"),
        (":", "jump to a seq"),
        ("t", "show the event's span in the timeline"),
    )),
    ("Tools", (
        ("s", "sort: time, latency, status, tool"),
        ("i", "group by identity (tool + argument hash) to see repeats"),
        ("t / enter", "show the call's span in the timeline"),
    )),
    ("SQL", (
        ("ctrl+r / F5", "run the query"),
        ("named query", "pick one of queries/sql/*.sql into the editor"),
    )),
)


def help_text() -> Text:
    out = Text(end="")
    for i, (section, keys) in enumerate(HELP):
        if i:
            out.append("\n\n")
        out.append(section, style="bold underline")
        for key, what in keys:
            out.append(f"\n  {key:<16}", style="bold")
            out.append(what)
    return out


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box", classes="modal-box"):
            yield Label("agenttrail TUI — keys", classes="modal-title")
            with VerticalScroll():
                yield Static(help_text())
            yield Label("esc closes", classes="modal-hint")

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)


class ErrorModal(ModalScreen[None]):
    """One error: what happened, and what to do."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter,q", "close", "Close")]

    def __init__(self, title: str, message: str, hint: str = "") -> None:
        super().__init__()
        self.error_title, self.message, self.hint = title, message, hint

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box", classes="modal-box"):
            yield Label(literal(self.error_title), classes="modal-title")
            with VerticalScroll():
                yield Static(literal_block(self.message), id="error-message")
                if self.hint:
                    yield Static(Text("what to do: ", style="bold") + literal_block(self.hint),
                                 id="error-hint")
            yield Label("enter or esc closes", classes="modal-hint")

    def action_close(self) -> None:
        self.dismiss(None)


def run_label(r: RunInfo) -> Text:
    status = (r.status or "?").upper()
    style = "bold red" if status == "FAILED" else "bold green" if status == "SUCCEEDED" else "bold"
    t = Text(end="")
    t.append(f"{r.bundle_id:>2} ", style="dim")
    t.append_text(literal(r.run_id, style="bold"))
    t.append(f"  {status}", style=style)
    if r.failure_type:
        t.append("  ")
        t.append_text(literal(r.failure_type, style="italic"))
    t.append(f"  {r.events:,} events · {r.spans:,} spans", style="dim")
    return t


class RunPicker(ModalScreen[int | None]):
    """Choose which loaded run the views show; returns its bundle_id."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, runs: Sequence[RunInfo], current: int | None) -> None:
        super().__init__()
        self.runs, self.current = list(runs), current

    def compose(self) -> ComposeResult:
        with Vertical(id="runs-box", classes="modal-box"):
            yield Label(f"Runs ({len(self.runs)})", classes="modal-title")
            yield OptionList(*[Option(run_label(r), id=str(r.bundle_id)) for r in self.runs], id="run-list")
            yield Label("enter picks · esc cancels", classes="modal-hint")

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        for i, r in enumerate(self.runs):
            if r.bundle_id == self.current:
                ol.highlighted = i

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0))

    def action_cancel(self) -> None:
        self.dismiss(None)


class SeqPrompt(ModalScreen[int | None]):
    """Ask for an event seq to jump to."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="seq-box", classes="modal-box"):
            yield Label("Jump to seq", classes="modal-title")
            yield Input(placeholder="seq, e.g. 120", id="seq-input", type="integer")

    def on_mount(self) -> None:
        self.query_one(Input).cursor_blink = False

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(int(value) if value.lstrip("-").isdigit() else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
