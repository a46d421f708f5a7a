"""Timeline: the span tree with waterfall bars; expand/collapse, next error, filter by kind."""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar, Final

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from .._text import clip, one_line
from ..context import JumpToSeq, RunContext, ShowDetail, in_thread, worker_cancelled
from ..data import Cursor, SpanNode, SpanTree, gc_deferred, span_detail, span_tree
from ..widgets.detail import fields_table, pretty_json
from ..widgets.vtable import Column, ListSource, Row, VirtualTable

# distinct hues (an LLM call must not read as an error): purple, teal, green; errors red, loops amber
KIND_STYLE: Final = {"llm": "#b48ead", "tool": "#56b6c2", "node": "#98c379", "run": "bold #81a1c1",
                     "agent": "bold #81a1c1"}
ERROR_STYLE: Final = "bold #ff5f5f"
LOOP_STYLE: Final = "bold #ffaf00"
FILTERS: Final = ("all", "llm", "tool", "node", "errors")
MAX_INDENT: Final = 12


def _node(row: Row) -> SpanNode:
    return row[2]


class NodeSource:
    """The shown spans; a row (name, duration, node) is made for the window on screen only."""

    def __init__(self, nodes: list[SpanNode]) -> None:
        self.nodes = nodes

    def count(self) -> int:
        return len(self.nodes)

    def fetch(self, offset: int, limit: int) -> list[Row]:
        return [(n.name, n.duration_ms, n) for n in self.nodes[offset:offset + limit]]


class TimelineTable(VirtualTable):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "select", "Expand/collapse", show=False),
    ]


class TimelineView(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "next_error(1)", "Next error"),
        Binding("E", "next_error(-1)", "Prev error", show=False),
        Binding("l", "next_flagged", "Next in finding", show=False),
        Binding("f", "cycle_filter", "Filter kind"),
        Binding("plus,equals_sign", "expand_all", "Expand all", show=False),
        Binding("minus", "collapse_all", "Collapse all", show=False),
        Binding("v", "events", "Span events", show=False),
    ]

    ctx: RunContext | None = None
    trace: SpanTree | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.collapsed: set[str] = set()
        self.kind_filter = "all"
        self.shown: list[SpanNode] = []

    def compose(self) -> ComposeResult:
        yield Static(id="timeline-bar", classes="toolbar")
        yield TimelineTable(id="spans", empty_text="no spans in this run (the events tab has its log)")

    # -- data --------------------------------------------------------------------------------------------

    _pending_span: str | None = None

    def show_run(self, ctx: RunContext) -> None:
        """Take the run; its span tree is read by ``ensure_loaded`` (tab opened, or after the detectors)."""
        self.ctx, self.trace, self._requested = ctx, None, False
        self.collapsed.clear()
        self.kind_filter = "all"
        self.shown = []
        self.table.set_source(self._columns(), ListSource([]))
        self.table.loading = True

    _requested = False

    def ensure_loaded(self) -> None:
        """Build the span tree in a worker (once per run): a big trace must not hold up the screen."""
        ctx = self.ctx
        if ctx is None or self._requested:
            return
        self._requested = True
        in_thread(self.app, ctx.store, partial(_tree_job, bundle_id=ctx.bundle_id, flagged=ctx.flagged_spans),
                  self._loaded, group="timeline", description="span tree")

    def mark_flagged(self, flagged: set[str]) -> None:
        """The findings arrived after the tree was built: mark the spans they name."""
        if self.trace is None:
            return  # not built yet: it is built with the findings' spans
        for span_id in flagged:
            node = self.trace.by_id.get(span_id)
            if node is not None:
                node.flagged = True
        self.table.refresh()

    def _loaded(self, tree: SpanTree) -> None:
        self.trace = tree
        self.table.loading = False
        self._rebuild()
        if self._pending_span is not None:
            span, self._pending_span = self._pending_span, None
            self.jump_to_span(span)

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#spans", VirtualTable)

    def _columns(self) -> list[Column]:
        return [Column("name", "span", 34, render=self._render_name),
                Column("dur", "duration", 9, align="right", fmt=_fmt_ms),
                Column("bar", "waterfall", render=self._render_bar)]

    def _matches(self, n: SpanNode) -> bool:
        f = self.kind_filter
        if f == "all":
            return True
        if f == "errors":
            return n.failed
        if f == "node":
            return n.kind in ("node", "agent", "run")
        return n.kind == f

    def _visible_nodes(self) -> list[SpanNode]:
        if self.trace is None:
            return []
        if self.kind_filter == "all" and not self.collapsed:
            return self.trace.order  # built with the tree, in the worker: no walk of a big trace here
        keep: set[str] | None = None
        if self.kind_filter != "all":
            keep = set()
            for n in self.trace.by_id.values():
                if self._matches(n):
                    cur: SpanNode | None = n
                    while cur is not None and cur.span_id not in keep:
                        keep.add(cur.span_id)
                        cur = self.trace.by_id.get(cur.parent_id) if cur.parent_id else None
        out: list[SpanNode] = []
        stack = list(reversed(self.trace.roots))
        while stack:
            n = stack.pop()
            if keep is not None and n.span_id not in keep:
                continue
            out.append(n)
            if n.span_id not in self.collapsed:
                stack.extend(reversed(n.children))
        return out

    def _rebuild(self, focus_span: str | None = None) -> None:
        current = self.table.current
        keep_id = focus_span or (_node(current).span_id if current else None)
        self.shown = self._visible_nodes()
        keep = self.trace.by_id.get(keep_id) if self.trace is not None and keep_id else None
        index = next((i for i, n in enumerate(self.shown) if n is keep), 0) if keep is not None else 0
        self.table.set_source(self._columns(), NodeSource(self.shown), cursor=index)
        self._update_bar()

    def _update_bar(self) -> None:
        t = Text(end="")
        t.append("filter ", style="bold")
        t.append(self.kind_filter, style="reverse" if self.kind_filter != "all" else "")
        t.append(f"  {len(self.shown):,} shown", style="dim")
        t.append("   ")
        for kind in ("llm", "tool", "node"):
            t.append("█", style=KIND_STYLE[kind])
            t.append(f" {kind} ")
        t.append("█", style=ERROR_STYLE)
        t.append(" error ")
        t.append("↻", style=LOOP_STYLE)
        t.append(" loop")
        self.query_one("#timeline-bar", Static).update(t)

    # -- cells -------------------------------------------------------------------------------------------

    def _render_name(self, _value: Any, row: Row, width: int) -> Text:
        n = _node(row)
        depth = min(n.depth, MAX_INDENT)
        glyph = ("▸ " if n.span_id in self.collapsed else "▾ ") if n.children else "  "
        t = Text("  " * depth + glyph, no_wrap=True, end="")
        if n.failed:
            t.append("✗ ", style=ERROR_STYLE)
        elif n.flagged or n.repeated:
            t.append("↻ ", style=LOOP_STYLE)
        room = max(width - t.cell_len, 1)
        t.append(clip(one_line(n.name), room),
                 style=ERROR_STYLE if n.failed else KIND_STYLE.get(n.kind, ""))
        return t

    def _render_bar(self, _value: Any, row: Row, width: int) -> Text:
        n = _node(row)
        tree = self.trace
        if tree is None or width <= 0:
            return Text(end="")
        total = max(tree.end_ns - tree.start_ns, 1)
        x0 = int((n.start_ns - tree.start_ns) * width / total)
        x1 = int((n.end_ns - tree.start_ns) * width / total + 0.999)
        x0 = min(max(x0, 0), width - 1)
        x1 = min(max(x1, x0 + 1), width)
        style = ERROR_STYLE if n.failed else (LOOP_STYLE if n.flagged else KIND_STYLE.get(n.kind, "white"))
        t = Text(" " * x0, no_wrap=True, end="")
        t.append("█" * (x1 - x0), style=style)
        return t

    # -- navigation ---------------------------------------------------------------------------------------

    def jump_to_span(self, span_id: str) -> bool:
        """Show ``span_id``: clear a filter hiding it, expand its ancestors, put the cursor on it."""
        if self.trace is None and self.ctx is not None:
            self._pending_span = span_id  # still loading: go there when the tree arrives
            self.ensure_loaded()
            return True
        if self.trace is None or span_id not in self.trace.by_id:
            return False
        node = self.trace.by_id[span_id]
        if not self._matches(node):
            self.kind_filter = "all"
        cur = self.trace.by_id.get(node.parent_id) if node.parent_id else None
        while cur is not None:
            self.collapsed.discard(cur.span_id)
            cur = self.trace.by_id.get(cur.parent_id) if cur.parent_id else None
        self._rebuild(focus_span=span_id)
        return True

    def _seek(self, predicate: Any, direction: int) -> None:
        if not self.shown:
            return
        start = self.table.cursor_row
        count = len(self.shown)
        for step in range(1, count + 1):
            i = (start + direction * step) % count
            if predicate(self.shown[i]):
                self.table.move_to(i)
                return
        self.app.notify("none in the visible spans", timeout=2)

    def action_next_error(self, direction: int) -> None:
        if self.trace is not None and (self.collapsed or self.kind_filter != "all"):
            # errors inside collapsed subtrees count too: open the path to the next one
            shown = {v.span_id for v in self.shown}
            hidden = [n for n in self.trace.by_id.values() if n.failed and n.span_id not in shown]
            for n in hidden:
                cur = self.trace.by_id.get(n.parent_id) if n.parent_id else None
                while cur is not None:
                    self.collapsed.discard(cur.span_id)
                    cur = self.trace.by_id.get(cur.parent_id) if cur.parent_id else None
            if hidden:
                self._rebuild()
        self._seek(lambda n: n.failed, direction)

    def action_next_flagged(self) -> None:
        self._seek(lambda n: n.flagged or n.repeated, 1)

    def action_cycle_filter(self) -> None:
        self.kind_filter = FILTERS[(FILTERS.index(self.kind_filter) + 1) % len(FILTERS)]
        self._rebuild()

    def action_expand_all(self) -> None:
        self.collapsed.clear()
        self._rebuild()

    def action_collapse_all(self) -> None:
        if self.trace is not None:
            self.collapsed = {n.span_id for n in self.trace.by_id.values() if n.children}
            roots = {r.span_id for r in self.trace.roots}
            self.collapsed -= roots  # keep the top level open: collapsing it would hide everything
        self._rebuild()

    def action_events(self) -> None:
        row = self.table.current
        if self.ctx is None or row is None:
            return
        found = self.ctx.ui.execute("SELECT min(seq) FROM events WHERE bundle_id = ? AND span_id = ?",
                                    [self.ctx.bundle_id, _node(row).span_id]).fetchone()
        if found and found[0] is not None:
            self.post_message(JumpToSeq(int(found[0])))
        else:
            self.app.notify("no events link to this span", timeout=2)

    def on_virtual_table_selected(self, event: VirtualTable.Selected) -> None:
        event.stop()
        if event.row is None:
            return
        n = _node(event.row)
        if n.children:
            if n.span_id in self.collapsed:
                self.collapsed.discard(n.span_id)
            else:
                self.collapsed.add(n.span_id)
            self._rebuild(focus_span=n.span_id)

    def on_virtual_table_highlighted(self, event: VirtualTable.Highlighted) -> None:
        event.stop()
        if self.ctx is None or event.row is None:
            return
        n = _node(event.row)
        d = span_detail(self.ctx.ui, self.ctx.bundle_id, n.span_id)
        if d is None:
            return
        head: dict[str, Any] = {
            "kind": f"{d['kind']} ({d['operation'] or 'no operation'})",
            "status": "error" if d["status_code"] == 2 else "ok" if d["status_code"] == 1 else "unset",
            "duration": _fmt_ms(d["duration_ms"]),
            "start": d["start_ts"], "span_id": d["span_id"], "parent": d["parent_span_id"] or ""}
        if d.get("error_type") or d.get("status_message"):
            head["error"] = f"{d.get('error_type') or ''} {d.get('status_message') or ''}".strip()
        if d.get("request_model"):
            head["model"] = d["request_model"]
            head["tokens"] = f"{d.get('input_tokens') or 0:,} in / {d.get('output_tokens') or 0:,} out"
        if d.get("tool_name"):
            head["tool"] = f"{d['tool_name']} #{d.get('input_hash') or ''}"
        if n.flagged:
            head["finding"] = "named in a finding's evidence"
        sections: list[tuple[str, Any]] = [("", fields_table(head)),
                                           ("attributes", fields_table(d["attributes"], 30))]
        if d["linked_events"]:
            sections.append(("events (v jumps)", fields_table(
                {str(e["seq"]): f"{e['type']} · {e['actor'] or ''}" for e in d["linked_events"]})))
        if d["span_events"]:
            sections.append(("span events", pretty_json(d["span_events"])))
        self.post_message(ShowDetail(self, f"span · {d['name']}", sections))


def _tree_job(cur: Cursor, *, bundle_id: int, flagged: set[str]) -> SpanTree:
    with gc_deferred(freeze=lambda: not worker_cancelled()):
        return span_tree(cur, bundle_id, flagged, should_stop=worker_cancelled)


def _fmt_ms(value: Any) -> str:
    if value is None:
        return ""
    ms = float(value)
    if ms >= 60_000:
        return f"{ms / 60_000:.1f} min"
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    return f"{ms:.1f} ms"


__all__ = ["TimelineView"]
