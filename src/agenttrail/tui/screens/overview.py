"""Overview: the run header (status, failure, duration, tokens, cost) and the findings list."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Static

from .._text import literal
from ..context import JumpToEvidence, RunContext, ShowDetail
from ..data import RunInfo
from ..widgets.detail import fields_table, pretty_json
from ..widgets.vtable import Column, ListSource, VirtualTable

SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}


def human_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(int(seconds), 60)
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m:02d} min" if hours else f"{m} min {s:02d} s"


def run_header(r: RunInfo, findings: int) -> Text:
    status = (r.status or "unknown").upper()
    style = {"FAILED": "bold white on red", "SUCCEEDED": "bold black on green",
             "CANCELLED": "bold black on yellow"}.get(status, "bold reverse")
    t = Text(end="")
    t.append(f" {status} ", style=style)
    t.append(" ")
    t.append_text(literal(r.run_id, style="bold"))
    who = " · ".join(x for x in (r.agent_name, r.workflow_name) if x)
    if who:
        t.append("  ")
        t.append_text(literal(who, style="dim"))
    t.append("\n")
    if r.failure_type or r.failure_message:
        t.append("failure  ", style="bold")
        t.append_text(literal(r.failure_type or "", style="red"))
        if r.failure_message:
            t.append(": ")
            t.append_text(literal(r.failure_message))
    else:
        t.append("failure  ", style="bold")
        t.append("none recorded", style="dim")
    t.append("\n")
    t.append("duration ", style="bold")
    t.append(human_duration(r.duration_s))
    t.append("  tokens ", style="bold")
    t.append(f"{r.input_tokens:,} in / {r.output_tokens:,} out")
    t.append("  cost ", style="bold")
    t.append(f"${r.cost_usd:,.2f}" if r.cost_usd is not None else "n/a", style="" if r.cost_usd else "dim")
    t.append("\n")
    t.append("calls    ", style="bold")
    t.append(f"{r.llm_calls:,} LLM · {r.tool_calls:,} tool")
    if r.tool_errors:
        t.append(f" ({r.tool_errors:,} failed)", style="red")
    t.append(f" · {r.spans:,} spans · {r.events:,} events")
    if r.warnings:
        t.append(f" · {r.warnings:,} load warnings", style="yellow")
    return t


FINDING_COLUMNS = (
    Column("severity", "sev", 7, style=lambda v, _r: SEVERITY_STYLE.get(str(v), "")),
    Column("code", "code", 16),
    Column("summary", "summary"),
)


EMPTY = "no findings: the detectors saw nothing wrong"


class OverviewView(Vertical):
    ctx: RunContext | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="run-header")
        yield Label("Findings", id="findings-title", classes="section-title")
        yield VirtualTable(id="findings", empty_text=EMPTY)

    def show_run(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.query_one("#run-header", Static).update(run_header(ctx.run, len(ctx.findings or [])))
        self.show_findings(ctx)

    def show_findings(self, ctx: RunContext) -> None:
        """The findings list, or "analysing…" while the detectors run (they fill it in when done)."""
        table = self.query_one("#findings", VirtualTable)
        if ctx.findings is None:
            self.query_one("#findings-title", Label).update(Text("Findings · analysing…"))
            table.empty_text = "analysing… (the detectors are running; the other tabs work already)"
            table.set_source(FINDING_COLUMNS, ListSource([]))
            table.styles.height = 2
            return
        title = f"Findings ({len(ctx.findings)})"
        if ctx.failures:
            title += f" · {len(ctx.failures)} detector(s) failed: " + ", ".join(f.code for f in ctx.failures)
        self.query_one("#findings-title", Label).update(Text(title))
        rows = [(f.severity, f.code, f.summary, i) for i, f in enumerate(ctx.findings)]
        table.empty_text = EMPTY
        table.set_source(FINDING_COLUMNS, ListSource(rows))
        # as tall as the findings (the detail pane below gets the rest), within reason
        table.styles.height = min(max(len(rows), 1) + 1, 12)

    def on_virtual_table_highlighted(self, event: VirtualTable.Highlighted) -> None:
        event.stop()
        if self.ctx is None or not self.ctx.findings or event.row is None:
            return
        f = self.ctx.findings[int(event.row[3])]
        extra: dict[str, Any] = dict(f.fields)
        ev = f.evidence
        self.post_message(ShowDetail(self, f"{f.severity} · {f.code}", [
            ("", fields_table({"run": f.run_id, "summary": f.summary,
                               "jump": f"{len(ev.span_ids)} spans, {len(ev.event_seqs)} events "
                                           "(enter jumps there)"})),
            ("evidence", fields_table({"span_ids": ", ".join(ev.span_ids[:12]) +
                                       (" …" if len(ev.span_ids) > 12 else ""),
                                       "event_seqs": ", ".join(map(str, ev.event_seqs[:20])) +
                                       (" …" if len(ev.event_seqs) > 20 else "")})),
            ("fields", pretty_json(extra)),
        ]))

    def on_virtual_table_selected(self, event: VirtualTable.Selected) -> None:
        event.stop()
        if self.ctx is not None and self.ctx.findings and event.row is not None:
            self.post_message(JumpToEvidence(self.ctx.findings[int(event.row[3])]))
