"""Dashboards and queries use only metric, label and attribute names that agenttrail emits.

The emitted names come from ``agenttrail.names`` (metrics with their instrument kind and unit as
``Instruments.create`` declares them); Prometheus names follow the collector's default translation
(dots to underscores, ``_seconds`` for unit ``s``, ``_total`` for counters, ``_bucket``/``_sum``/
``_count`` for histograms, no suffix for ``{...}`` units).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agenttrail import names
from agenttrail.instrument._runtime import Instruments

ROOT = Path(__file__).resolve().parents[2]
PROM_IDENT = re.compile(r"\b(?:gen_ai|agenttrail)_[a-z0-9_]+\b")
DOTTED_ATTR = re.compile(r"\b(?:span|resource)?\.?((?:gen_ai|agenttrail)\.[a-z0-9_.]+[a-z0-9_])")


class _DeclaringMeter:
    """Records what ``Instruments.create`` declares (a stand-in meter: names, kinds and units only)."""

    def __init__(self) -> None:
        self.declared: dict[str, tuple[str, str]] = {}

    def _make(self, kind: str) -> Any:
        def create(name: str, unit: str = "", **_: Any) -> None:
            self.declared[name] = (kind, unit)

        return create

    def __getattr__(self, attr: str) -> Any:
        return self._make(attr.removeprefix("create_"))


def _prometheus_metric_names() -> set[str]:
    meter = _DeclaringMeter()
    Instruments.create(meter)  # type: ignore[arg-type]
    assert set(meter.declared) == set(names.METRICS)  # every declared metric is in names.METRICS
    out: set[str] = set()
    for name, (kind, unit) in meter.declared.items():
        base = name.replace(".", "_")
        if unit == "s":
            base += "_seconds"
        if kind == "counter":
            out.add(base + "_total")
        elif kind == "histogram":
            out.update(base + s for s in ("", "_bucket", "_sum", "_count"))
        else:
            out.add(base)
    return out


def _attributes() -> set[str]:
    return {v for k, v in vars(names).items()
            if k.isupper() and isinstance(v, str) and re.fullmatch(r"(gen_ai|agenttrail|error|server)\.[a-z0-9_.]+", v)}


def _files() -> list[Path]:
    files = [p for p in (ROOT / "queries").rglob("*") if p.is_file() and p.suffix != ".sql"]
    return files + sorted((ROOT / "dashboards").glob("*.json"))


def test_there_is_something_to_check() -> None:
    if not _files():
        pytest.skip("no dashboards or queries yet")
    assert _prometheus_metric_names() >= {"gen_ai_client_token_usage_bucket", "agenttrail_runs_total",
                                          "gen_ai_client_operation_duration_seconds_bucket"}


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_emitted_names_are_used(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    attrs = _attributes()
    allowed_prom = _prometheus_metric_names() | {a.replace(".", "_") for a in attrs}
    unknown = sorted({m for m in PROM_IDENT.findall(text)} - allowed_prom)
    assert unknown == [], f"{path.name} uses names agenttrail does not emit: {unknown}"
    dotted = {m for m in DOTTED_ATTR.findall(text)} - attrs - set(names.METRICS)
    assert sorted(dotted) == [], f"{path.name} uses attributes agenttrail does not emit: {sorted(dotted)}"
