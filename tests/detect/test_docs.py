"""docs/detectors.md documents every installed built-in detector and its thresholds with their defaults."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agenttrail.detect import available

DOC = Path(__file__).resolve().parents[2] / "docs" / "detectors.md"


def _sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^## `([a-z_]+)`$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_detector_has_a_section_with_meaning_action_and_thresholds() -> None:
    sections = _sections()
    builtin = {c: cls for c, cls in available().items() if cls.__module__.startswith("agenttrail.")}
    assert len(builtin) == 13
    missing = sorted(set(builtin) - set(sections))
    assert missing == [], f"undocumented detectors in docs/detectors.md: {missing}"
    for code, cls in builtin.items():
        body = sections[code]
        assert "**What it means.**" in body and "**What to do.**" in body, code
        line = next(x for x in body.splitlines() if x.startswith("Thresholds:"))
        if not cls.defaults:
            assert line == "Thresholds: none.", code
        for key, value in cls.defaults.items():
            shown = json.dumps(value) if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)
            assert f"`{key}` = {shown}" in line, (code, key, line)
