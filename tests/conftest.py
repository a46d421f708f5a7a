"""Shared fixtures: in-memory OpenTelemetry exporters configured once per test session.

OpenTelemetry's global providers can be set once per process, so the session configures agenttrail
with in-memory exporters and each test clears them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agenttrail as at
from agenttrail.instrument._content import CaptureMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))


@dataclass
class Telemetry:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    logs: InMemoryLogRecordExporter
    collected: dict = field(default_factory=dict)

    def finished(self):
        return list(self.spans.get_finished_spans())

    def span(self, name: str):
        found = [s for s in self.finished() if s.name == name]
        assert len(found) == 1, f"expected one span {name!r}, got {[s.name for s in self.finished()]}"
        return found[0]

    def metric_points(self, name: str) -> list:
        """Points recorded since the test began (delta temporality, collected cumulatively here)."""
        data = self.metrics.get_metrics_data()
        for rm in data.resource_metrics if data else []:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    self.collected.setdefault(m.name, []).extend(m.data.data_points)
        return list(self.collected.get(name, []))


_SESSION: Telemetry | None = None


def _session_telemetry() -> Telemetry:
    global _SESSION
    if _SESSION is None:
        spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
        from opentelemetry.sdk.metrics import Counter, Histogram
        from opentelemetry.sdk.metrics.export import AggregationTemporality

        # delta temporality: each collection holds only what the current test recorded
        reader = InMemoryMetricReader(preferred_temporality={
            Counter: AggregationTemporality.DELTA, Histogram: AggregationTemporality.DELTA})
        at.configure(service_name="agenttrail-tests", exporters=False,
                     span_processors=(SimpleSpanProcessor(spans),), metric_readers=(reader,),
                     log_processors=(SimpleLogRecordProcessor(logs),))
        _SESSION = Telemetry(spans, reader, logs)
    return _SESSION


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    t = _session_telemetry()
    t.spans.clear()
    t.logs.clear()
    t.metrics.get_metrics_data()  # drain what earlier tests recorded
    t.collected.clear()
    yield t
    at.configure(capture_content=CaptureMode.NO_CONTENT)


@pytest.fixture
def capture(telemetry: Telemetry):
    def set_mode(mode: str) -> None:
        at.configure(capture_content=mode)

    return set_mode


@pytest.fixture(scope="session")
def demo_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The foundation demo's failed run, sealed once per session."""
    import custom_harness

    _session_telemetry()
    at.configure(capture_content="SPAN_AND_EVENT")
    try:
        ws = tmp_path_factory.mktemp("demo") / "workspace"
        bundle = custom_harness.run_demo(ws)
    finally:
        at.configure(capture_content=CaptureMode.NO_CONTENT)
    assert bundle is not None
    return bundle
