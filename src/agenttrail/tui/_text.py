"""Untrusted text made safe to show: nothing from a bundle is ever interpreted by the terminal or Rich.

Bundles hold whatever an agent saw: tool output with ANSI colours, OSC 8 hyperlinks, Rich markup such as
``[link=...]``, control characters and bidi overrides. Everything the TUI shows from a bundle goes
through :func:`literal` (one line) or :func:`literal_block` (many lines) and becomes a ``rich.text.Text``
built from plain strings — never markup — with every control character spelled out (``\\x1b``).
"""

from __future__ import annotations

import re
from typing import Final

from rich.text import Text

# C0 controls except \n and \t (handled per use), DEL, C1 controls, and the Unicode bidi / isolate
# controls that can reorder what a reader sees ("Trojan Source").
_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")

MAX_BLOCK_CHARS: Final = 64_000


def _spell(m: re.Match[str]) -> str:
    c = m.group(0)
    code = ord(c)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(value: str) -> str:
    """Every control character written out as an escape (``\\x1b``), so nothing reaches the terminal."""
    return _CONTROL.sub(_spell, value)


def one_line(value: object) -> str:
    """A value as one line of plain text: controls escaped, newlines and tabs shown as ``⏎`` and spaces."""
    if value is None:
        return ""
    s = value if isinstance(value, str) else str(value)
    return escape_controls(s.replace("\r\n", "⏎").replace("\n", "⏎").replace("\t", " "))


def literal(value: object, style: str = "") -> Text:
    """One line of untrusted text as a ``Text`` that is displayed exactly as written."""
    return Text(one_line(value), style=style, no_wrap=True, overflow="ellipsis", end="")


def literal_block(value: str, style: str = "", limit: int = MAX_BLOCK_CHARS) -> Text:
    """Many lines of untrusted text; cut at ``limit`` characters with a note saying how much was left out."""
    s = value.replace("\r\n", "\n").replace("\t", "    ")
    cut = ""
    if len(s) > limit:
        cut = f"\n… {len(s) - limit:,} more characters not shown"
        s = s[:limit]
    text = Text(escape_controls(s), style=style, end="")
    if cut:
        text.append(cut, style="italic dim")
    return text


def clip(value: str, width: int) -> str:
    """``value`` cut to ``width`` cells with an ellipsis (cells, not characters: CJK is two wide)."""
    from rich.cells import cell_len, set_cell_size

    if width <= 0:
        return ""
    if cell_len(value) <= width:
        return value
    return set_cell_size(value, width - 1) + "…"
