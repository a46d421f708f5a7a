"""Detectors are plugins of the entry point group ``agenttrail.detectors``; built-ins register the
same way (pyproject.toml). A detector is a class with ``code``, ``severity``, ``title``,
``defaults`` (its thresholds) and ``detect(store, config) -> list[Finding]``; it only reads the store.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol

from ..errors import DetectorError
from ..store import Store
from .finding import DetectorFailure, Finding, severity_rank

GROUP = "agenttrail.detectors"


class Detector(Protocol):
    code: ClassVar[str]
    title: ClassVar[str]
    defaults: ClassVar[Mapping[str, Any]]

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]: ...


def available() -> dict[str, type[Detector]]:
    """Every installed detector by code (built-ins and third-party plugins)."""
    found: dict[str, type[Detector]] = {}
    for ep in entry_points(group=GROUP):
        cls = ep.load()
        found[getattr(cls, "code", ep.name)] = cls
    return dict(sorted(found.items()))


@dataclass
class Analysis:
    findings: list[Finding] = field(default_factory=list)
    failures: list[DetectorFailure] = field(default_factory=list)


def run_detectors(store: Store, codes: Iterable[str] | None = None,
                  config: Mapping[str, Mapping[str, Any]] | None = None) -> Analysis:
    """Run the chosen detectors (all by default); a crashing detector is recorded, not fatal."""
    registry = available()
    chosen = list(codes) if codes else list(registry)
    unknown = [c for c in chosen if c not in registry]
    if unknown:
        raise DetectorError(f"unknown detector {', '.join(unknown)}",
                            f"choose from: {', '.join(registry)}")
    result = Analysis()
    for code in chosen:
        cls = registry[code]
        cfg = {**cls.defaults, **((config or {}).get(code) or {})}
        try:
            result.findings.extend(cls().detect(store, cfg))
        except Exception as e:  # noqa: BLE001 - one broken detector must not hide the others
            last = traceback.extract_tb(e.__traceback__)[-1]
            result.failures.append(DetectorFailure(
                code, f"{type(e).__name__}: {e} ({last.filename}:{last.lineno})"))
    result.findings.sort(key=lambda f: (-severity_rank(f.severity), f.bundle_id or 0, f.code))
    return result
