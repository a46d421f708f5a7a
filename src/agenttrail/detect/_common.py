"""Helpers shared by the built-in detectors: durations as people read them, evidence lists."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .finding import Evidence

MAX_EVIDENCE = 200


def seconds_text(s: float | None) -> str:
    if s is None:
        return "?"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def usd(x: float | None) -> str:
    return "?" if x is None else (f"${x:,.2f}" if x >= 0.1 else f"${x:.4f}")


def evidence(span_ids: Iterable[Any] = (), event_seqs: Iterable[Any] = ()) -> Evidence:
    return Evidence(span_ids=[str(s) for s in span_ids if s][:MAX_EVIDENCE],
                    event_seqs=[int(s) for s in event_seqs if s is not None][:MAX_EVIDENCE])


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"
