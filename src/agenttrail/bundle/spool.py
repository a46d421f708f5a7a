"""The flight recorder's spool, as the bundle side reads it.

A spool directory (``<workspace>/.agenttrail/spool/<run_id>/``) holds ``run.json``, ``events.jsonl``,
``trace.jsonl`` (each possibly rotated into ``events.1.jsonl`` … , higher numbers older) and, when used,
``checkpoints.jsonl`` and ``last_state.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def spool_files(spool_dir: Path, name: str) -> list[Path]:
    """The rotated parts of one spool file in write order (oldest first)."""
    stem, suffix = name.split(".", 1)
    parts = sorted(
        spool_dir.glob(f"{stem}.*.{suffix}"),
        key=lambda p: int(p.name.split(".")[1]) if p.name.split(".")[1].isdigit() else 0,
        reverse=True,
    )
    parts = [p for p in parts if p.name.split(".")[1].isdigit()]
    current = spool_dir / name
    return parts + ([current] if current.exists() else [])


def last_seq(spool_dir: Path) -> int:
    """The highest ``seq`` in a spool (0 when empty); tolerates a torn last line."""
    files = spool_files(spool_dir, "events.jsonl")
    for path in reversed(files):
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 65536))
            tail = fh.read().splitlines()
        for raw in reversed(tail):
            try:
                return int(json.loads(raw)["seq"])
            except (ValueError, KeyError, TypeError):
                continue
    return 0


