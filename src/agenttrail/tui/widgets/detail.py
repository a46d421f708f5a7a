"""The detail pane: whatever is selected, as attributes, pretty JSON payloads and linked items."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.highlighter import JSONHighlighter
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from .._text import literal, literal_block

_JSON = JSONHighlighter()


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def pretty_json(value: Any) -> Text:
    """A payload as indented JSON, highlighted, with nothing inside it interpreted."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return literal_block(value)
    text = literal_block(json.dumps(value, indent=2, ensure_ascii=False, default=_default))
    return _JSON(text)


def fields_table(fields: Mapping[str, Any], key_width: int = 16) -> Text:
    """``key  value`` lines; values on one line each, literal."""
    out = Text(end="")
    width = min(max((len(k) for k in fields), default=0), key_width)
    for i, (k, v) in enumerate(fields.items()):
        if i:
            out.append("\n")
        out.append(literal(k.ljust(width), style="bold"))
        out.append("  ")
        out.append_text(literal(_default(v) if isinstance(v, datetime) else
                                f"{v:,.3f}" if isinstance(v, float) else v))
    return out


class DetailPane(VerticalScroll, can_focus=True):
    """Shows one item: a title, then sections (fields, JSON payloads, linked items)."""

    DEFAULT_CSS = """
    DetailPane { height: auto; }
    DetailPane > Static { width: 1fr; }
    """

    content: RenderableType = Text("Select a row to see its details.", style="italic dim")

    def compose(self) -> ComposeResult:
        yield Static(self.content, id="detail-body")

    def plain_text(self, width: int = 200) -> str:
        """What the pane shows, as plain text (for tests and copying)."""
        console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
        with console.capture() as capture:
            console.print(self.content)
        return capture.get()

    def show(self, title: str, sections: Sequence[tuple[str, RenderableType]]) -> None:
        parts: list[RenderableType] = [literal(title, style="bold")]
        for heading, body in sections:
            if heading:
                parts.append(Text(heading, style="bold underline"))
            parts.append(body)
        for part in parts:
            if isinstance(part, Text):
                part.end = "\n"  # one block per line: the builders make end-less Text
        self.content = Group(*parts)
        self.query_one("#detail-body", Static).update(self.content)
        self.scroll_home(animate=False)

    def clear(self, message: str = "Select a row to see its details.") -> None:
        self.content = Text(message, style="italic dim")
        self.query_one("#detail-body", Static).update(self.content)
