"""Names and small types of the bundle format (docs/bundle-format.md)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

FORMAT: Final = "agenttrail.bundle"
VERSION: Final = 1
MANIFEST: Final = "manifest.json"
EVENTS: Final = "events.jsonl"
EVENTS_ALIAS: Final = "session.jsonl"
TRACE_JSON: Final = "trace.json"
TRACE_JSONL: Final = "trace.jsonl"
LOGS: Final = "logs.jsonl"
METRICS: Final = "metrics.jsonl"
CHECKPOINTS: Final = "checkpoints.jsonl"
LAST_STATE: Final = "last_state.json"
TOOL_CALLS: Final = "tool_calls.csv"
WORKSPACE_TAR: Final = "workspace.tar.zst"
WORKSPACE_DIFF: Final = "workspace.diff"
ENV: Final = "env.txt"
SCREENSHOTS: Final = "screenshots"
PROGRESS: Final = "progress"

TOOL_CALLS_HEADER: Final = ("ts", "tool", "input_hash", "latency_ms", "status", "error")
TOOL_CALLS_EXTRA: Final = ("call_id", "span_id", "operation_id", "idempotency_key", "side_effect",
                           "exit_code", "error_type", "finished_ts")
RUN_STATUSES: Final = ("running", "succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class LoadWarning:
    """A problem in a bundle that did not stop the load: where it is and what it was."""

    file: str
    line: int | None
    message: str

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "message": self.message}


@dataclass
class WarningSink:
    items: list[LoadWarning] = field(default_factory=list)
    limit_per_file: int = 50
    _counts: dict[str, int] = field(default_factory=dict)

    def add(self, file: str, line: int | None, message: str) -> None:
        n = self._counts.get(file, 0) + 1
        self._counts[file] = n
        if n <= self.limit_per_file:
            self.items.append(LoadWarning(file, line, message))
        elif n == self.limit_per_file + 1:
            self.items.append(LoadWarning(file, None, "more problems in this file were not listed"))


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks (the manifest's ``files`` index)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def producer_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agenttrail")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
        return "0.0.0"
