"""SVG snapshots of the TUI at a fixed terminal size, with committed golden files.

pytest-textual-snapshot 1.1.0 pins syrupy 4.8.0, which requires pytest < 9, and this project pins pytest
9.2; so this module does the same job by hand: render the screen as Textual's ``export_screenshot`` does,
compare its text (a readable diff) and its SVG with ``tests/tui/snapshots/<name>.{txt,svg}``.
``AGENTTRAIL_SNAPSHOT_UPDATE=1 pytest tests/tui`` rewrites the golden files (review them: open the SVGs
in a browser) — the equivalent of ``--snapshot-update``. A mismatch writes the new render to
``build/tui-snapshots/`` next to the failure.
"""

from __future__ import annotations

import difflib
import io
import os
from pathlib import Path

from rich.console import Console
from textual.app import App

GOLDEN = Path(__file__).parent / "snapshots"
ACTUAL = Path(__file__).resolve().parents[2] / "build" / "tui-snapshots"
UPDATE = os.environ.get("AGENTTRAIL_SNAPSHOT_UPDATE") == "1"


def render(app: App[object], title: str) -> tuple[str, str]:
    """(svg, text) of the current screen."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    text = console.export_text(clear=False, styles=False)
    svg = console.export_svg(title=title)
    return svg, "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def assert_snapshot(app: App[object], name: str) -> None:
    svg, text = render(app, f"agenttrail tui · {name}")
    golden_svg, golden_txt = GOLDEN / f"{name}.svg", GOLDEN / f"{name}.txt"
    if UPDATE or not golden_svg.exists():
        if not UPDATE:
            raise AssertionError(f"no golden snapshot {golden_svg}; run with AGENTTRAIL_SNAPSHOT_UPDATE=1 "
                                 "and review the new files")
        GOLDEN.mkdir(parents=True, exist_ok=True)
        golden_svg.write_text(svg, encoding="utf-8")
        golden_txt.write_text(text, encoding="utf-8")
        return
    expected_txt = golden_txt.read_text(encoding="utf-8")
    expected_svg = golden_svg.read_text(encoding="utf-8")
    if text == expected_txt and svg == expected_svg:
        return
    ACTUAL.mkdir(parents=True, exist_ok=True)
    (ACTUAL / f"{name}.svg").write_text(svg, encoding="utf-8")
    (ACTUAL / f"{name}.txt").write_text(text, encoding="utf-8")
    diff = "".join(difflib.unified_diff(expected_txt.splitlines(True), text.splitlines(True),
                                        "golden", "actual"))
    raise AssertionError(f"snapshot {name} changed (new render in {ACTUAL}/{name}.svg; "
                         f"AGENTTRAIL_SNAPSHOT_UPDATE=1 accepts it)\n"
                         + (diff or "text identical; colours or styles differ"))
