"""What a detector reports: a ``Finding`` with a code, a severity, one sentence and evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

SEVERITIES: Final = ("info", "warning", "error")


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


@dataclass
class Evidence:
    """Where to look: span ids (into the trace) and event seqs (into events.jsonl)."""

    span_ids: list[str] = field(default_factory=list)
    event_seqs: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"span_ids": self.span_ids, "event_seqs": self.event_seqs}


@dataclass
class Finding:
    code: str
    severity: str
    run_id: str
    summary: str
    evidence: Evidence = field(default_factory=Evidence)
    fields: dict[str, Any] = field(default_factory=dict)
    bundle_id: int | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "severity": self.severity, "run_id": self.run_id,
                               "summary": self.summary, "evidence": self.evidence.as_dict()}
        for key, value in self.fields.items():
            out.setdefault(key, value)
        return out


@dataclass
class DetectorFailure:
    """A detector that raised: reported as such; the other detectors still ran."""

    code: str
    error: str

    def as_dict(self) -> dict[str, Any]:
        return {"detector": self.code, "error": self.error}
