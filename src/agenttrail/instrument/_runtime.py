"""Process-wide telemetry state: providers, instruments, capture mode, recorder.

``configure()`` is the only function here with side effects. Everything else reads the state through
``state()``, which works before ``configure()`` too (the OpenTelemetry API's proxy providers).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from opentelemetry import _logs, metrics, trace
from opentelemetry.metrics import Counter, Histogram
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

from .. import names
from ._content import CaptureMode, parse_capture_mode
from ._recorder import RecorderProcessor

_log = logging.getLogger("agenttrail")
_SCOPE = "agenttrail"
_reported: set[str] = set()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agenttrail")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"


def internal_error(where: str) -> None:
    """Report a bug in agenttrail's own telemetry code without harming the host program.

    Logged once per place; re-raised under pytest (``PYTEST_CURRENT_TEST``) so tests catch it.
    Call only from an ``except`` block.
    """
    if os.environ.get("PYTEST_CURRENT_TEST") and not os.environ.get("AGENTTRAIL_SWALLOW_ERRORS"):
        raise  # noqa: PLE0704 - re-raise the exception being handled
    if where not in _reported:
        _reported.add(where)
        _log.warning("agenttrail: internal error while %s; telemetry continues", where,
                     exc_info=sys.exc_info())


class RunFailed(Exception):
    """Raised by ``Run.fail(..., raise_=True)`` (or an enforced budget) to stop the harness.

    Recorded as the run's failure. The only exception agenttrail ever raises into user code, and only
    when the user asked for it.
    """

    def __init__(self, failure_type: str, message: str) -> None:
        super().__init__(message)
        self.failure_type = failure_type


@dataclass(frozen=True)
class RecorderOptions:
    """Flight recorder settings (``configure(recorder=...)``).

    ``enabled=False`` keeps no spool: events still get their ``seq`` and go to the log pipeline, but
    a failed run leaves no bundle. ``spool_dir`` moves every run's spool out of the workspace
    (``<spool_dir>/<run_id>/``); ``bundle_dir`` does the same for sealed bundles
    (``<bundle_dir>/<run_id>/`` instead of ``<workspace>/_debug``). Each spool file
    rotates at ``max_file_bytes`` and keeps at most ``max_files`` rotations, so a run's spool never
    exceeds about ``2 * max_file_bytes * (max_files + 1)`` bytes (events and trace).
    """

    enabled: bool = True
    spool_dir: Path | None = None
    bundle_dir: Path | None = None
    max_file_bytes: int = 256 << 20
    max_files: int = 8
    seal_on_success: bool = False

    @classmethod
    def coerce(cls, value: RecorderOptions | Mapping[str, Any] | bool | None) -> RecorderOptions:
        if value is None or value is True:
            return cls()
        if value is False:
            return cls(enabled=False)
        if isinstance(value, RecorderOptions):
            return value
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise TypeError(f"unknown recorder option(s) {unknown}; known: {sorted(known)}")
        opts = dict(value)
        for key in ("spool_dir", "bundle_dir"):
            if opts.get(key) is not None:
                opts[key] = Path(opts[key]).expanduser().resolve()
        if int(opts.get("max_file_bytes", 1)) <= 0 or int(opts.get("max_files", 1)) < 1:
            raise ValueError("recorder max_file_bytes must be > 0 and max_files >= 1")
        return cls(**opts)


@dataclass
class Instruments:
    operation_duration: Histogram
    token_usage: Histogram
    time_to_first_chunk: Histogram
    execute_tool_duration: Histogram
    invoke_agent_duration: Histogram
    invoke_workflow_duration: Histogram
    agent_tool_calls: Histogram
    agent_inference_calls: Histogram
    runs: Counter
    tool_errors: Counter
    rate_limits: Counter
    retries: Counter
    agent_tokens: Counter
    budget_used: Any  # a synchronous Gauge

    @classmethod
    def create(cls, meter: metrics.Meter) -> Instruments:
        h = meter.create_histogram
        return cls(
            operation_duration=h(names.M_CLIENT_OPERATION_DURATION, unit="s",
                                 description="Duration of GenAI client operation",
                                 explicit_bucket_boundaries_advisory=list(names.DURATION_BUCKETS)),
            token_usage=h(names.M_CLIENT_TOKEN_USAGE, unit="{token}",
                          description="Number of input and output tokens used",
                          explicit_bucket_boundaries_advisory=list(names.TOKEN_BUCKETS)),
            time_to_first_chunk=h(names.M_CLIENT_TIME_TO_FIRST_CHUNK, unit="s",
                                  description="Time to receive the first chunk of a stream",
                                  explicit_bucket_boundaries_advisory=list(names.DURATION_BUCKETS)),
            execute_tool_duration=h(names.M_EXECUTE_TOOL_DURATION, unit="s",
                                    description="Duration of a tool execution",
                                    explicit_bucket_boundaries_advisory=list(names.DURATION_BUCKETS)),
            invoke_agent_duration=h(names.M_INVOKE_AGENT_DURATION, unit="s",
                                    description="Duration of an agent invocation (a run)",
                                    explicit_bucket_boundaries_advisory=list(names.INVOKE_AGENT_BUCKETS)),
            invoke_workflow_duration=h(names.M_INVOKE_WORKFLOW_DURATION, unit="s",
                                       description="Duration of a workflow invocation (a run)",
                                       explicit_bucket_boundaries_advisory=list(names.INVOKE_WORKFLOW_BUCKETS)),
            agent_tool_calls=h(names.M_INVOKE_AGENT_TOOL_CALLS, unit="{tool_call}",
                               description="Tool calls per agent invocation",
                               explicit_bucket_boundaries_advisory=list(names.COUNT_BUCKETS)),
            agent_inference_calls=h(names.M_INVOKE_AGENT_INFERENCE_CALLS, unit="{inference_call}",
                                    description="Inference calls per agent invocation",
                                    explicit_bucket_boundaries_advisory=list(names.COUNT_BUCKETS)),
            runs=meter.create_counter(names.M_RUNS, unit="{run}", description="Runs finished, by status"),
            tool_errors=meter.create_counter(names.M_TOOL_ERRORS, unit="{error}",
                                             description="Tool calls that failed"),
            rate_limits=meter.create_counter(names.M_RATE_LIMITS, unit="{response}",
                                             description="Rate-limited responses"),
            retries=meter.create_counter(names.M_RETRIES, unit="{call}",
                                         description="Tool calls and inferences that retry the previous one"),
            agent_tokens=meter.create_counter(names.M_AGENT_TOKENS, unit="{token}",
                                              description="Tokens by agent, model and token type"),
            budget_used=meter.create_gauge(names.M_BUDGET_USED, unit="1",
                                           description="Share of the run's budget used (0..1)"),
        )  # fmt: skip


@dataclass
class State:
    tracer: trace.Tracer
    meter: metrics.Meter
    logger: _logs.Logger
    instruments: Instruments
    capture: CaptureMode
    recorder: RecorderProcessor
    recorder_attached: bool = False
    recorder_options: RecorderOptions = field(default_factory=RecorderOptions)
    handle: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


_state: State | None = None
_lock = threading.Lock()


def _build_state(capture: CaptureMode) -> State:
    version = _version()
    meter = metrics.get_meter(_SCOPE, version)
    return State(
        tracer=trace.get_tracer(_SCOPE, version),
        meter=meter,
        logger=_logs.get_logger(_SCOPE, version),
        instruments=Instruments.create(meter),
        capture=capture,
        recorder=RecorderProcessor(),
    )


def state() -> State:
    global _state
    s = _state
    if s is None:
        with _lock:
            if _state is None:
                _state = _build_state(parse_capture_mode(None))
                _attach_recorder(_state)
            s = _state
    return s


def _attach_recorder(s: State) -> None:
    """Add the recorder to the global SDK tracer provider, if there is one and it lacks it."""
    if s.recorder_attached:
        return
    provider = trace.get_tracer_provider()
    if isinstance(provider, SdkTracerProvider):
        provider.add_span_processor(s.recorder)
        s.recorder_attached = True
        # the run's GenAI log events (exceptions, inference details) go to the spool's logs.jsonl
        from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider

        from ._recorder import RecorderLogProcessor

        log_provider = _logs.get_logger_provider()
        if isinstance(log_provider, SdkLoggerProvider):
            log_provider.add_log_record_processor(RecorderLogProcessor(s.recorder))


Protocol = Literal["http/protobuf", "grpc"]


class TelemetryHandle:
    """What ``configure()`` returns: flush and shut down what it set up."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, logger_provider: Any,
                 owned: bool) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.logger_provider = logger_provider
        self.owned = owned

    def flush(self, timeout_millis: int = 5000) -> bool:
        ok = True
        for p in (self.tracer_provider, self.meter_provider, self.logger_provider):
            fn = getattr(p, "force_flush", None)
            if fn is not None:
                try:
                    ok = bool(fn(timeout_millis)) and ok
                except Exception:  # noqa: BLE001 - exporters may fail; never raise into the host
                    ok = False
        return ok

    def shutdown(self) -> None:
        if not self.owned:
            return
        for p in (self.tracer_provider, self.meter_provider, self.logger_provider):
            fn = getattr(p, "shutdown", None)
            if fn is not None:
                try:
                    fn()
                except Exception:  # noqa: BLE001
                    _log.warning("agenttrail: shutting down %s failed", type(p).__name__)


def configure(
    service_name: str | None = None,
    *,
    endpoint: str | None = None,
    protocol: Protocol | None = None,
    capture_content: str | CaptureMode | None = None,
    recorder: RecorderOptions | Mapping[str, Any] | bool | None = None,
    exporters: bool | None = None,
    span_processors: tuple[Any, ...] = (),
    metric_readers: tuple[Any, ...] = (),
    log_processors: tuple[Any, ...] = (),
) -> TelemetryHandle:
    """Set up tracing, metrics and logs with OTLP exporters, and the flight recorder.

    - Honours the standard ``OTEL_*`` variables (``OTEL_EXPORTER_OTLP_ENDPOINT``,
      ``OTEL_EXPORTER_OTLP_PROTOCOL``, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES`` ...);
      explicit arguments win.
    - Idempotent: a second call returns the first handle (and updates the capture mode).
    - If the application already installed SDK providers, they are kept: agenttrail adds its recorder
      to the existing tracer provider and uses the providers as they are (nothing replaced silently).
    - ``exporters=False`` (or no endpoint configured anywhere) records to the flight recorder only.
    - ``recorder`` sets the flight recorder (:class:`RecorderOptions`, a dict of its fields, or
      ``False`` to keep no spool). Like ``capture_content`` it may be changed by a later call; runs
      started afterwards use the new settings.
    """
    s = state()
    options = RecorderOptions.coerce(recorder) if recorder is not None else None
    with _lock:
        if capture_content is not None or s.handle is None:
            s.capture = parse_capture_mode(capture_content)
        if options is not None:
            s.recorder_options = options
        if s.handle is not None:
            return s.handle  # type: ignore[no-any-return]
        s.handle = _install_providers(service_name, endpoint, protocol, exporters,
                                      span_processors, metric_readers, log_processors)
        # Instruments and tracer were built against proxies; refresh them on the real providers.
        fresh = _build_state(s.capture)
        s.tracer, s.meter, s.logger, s.instruments = (
            fresh.tracer, fresh.meter, fresh.logger, fresh.instruments)
        _attach_recorder(s)
        return s.handle  # type: ignore[no-any-return]


def _install_providers(
    service_name: str | None,
    endpoint: str | None,
    protocol: Protocol | None,
    exporters: bool | None,
    span_processors: tuple[Any, ...],
    metric_readers: tuple[Any, ...],
    log_processors: tuple[Any, ...],
) -> TelemetryHandle:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.environment_variables import OTEL_SERVICE_NAME
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    existing = trace.get_tracer_provider()
    if isinstance(existing, SdkTracerProvider):
        _log.info("agenttrail: using the application's tracer provider (adding the recorder)")
        return TelemetryHandle(existing, metrics.get_meter_provider(), _logs.get_logger_provider(),
                               owned=False)

    attrs: dict[str, Any] = {}
    if service_name and not os.environ.get(OTEL_SERVICE_NAME):
        attrs["service.name"] = service_name
    resource = Resource.create(attrs)
    if endpoint is None:
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if exporters is None:
        exporters = bool(endpoint or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    protocol = protocol or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")  # type: ignore[assignment]

    tp = SdkTracerProvider(resource=resource)
    readers = list(metric_readers)
    lp = LoggerProvider(resource=resource)
    if exporters:
        span_exp, metric_exp, log_exp = _otlp_exporters(protocol or "http/protobuf", endpoint)
        # Bounded queues, non-blocking export: a dead collector drops telemetry, never the agent.
        tp.add_span_processor(BatchSpanProcessor(span_exp, max_queue_size=2048))
        readers.append(PeriodicExportingMetricReader(metric_exp, export_interval_millis=15000))
        lp.add_log_record_processor(BatchLogRecordProcessor(log_exp, max_queue_size=2048))
    for p in span_processors:
        tp.add_span_processor(p)
    for lpp in log_processors:
        lp.add_log_record_processor(lpp)
    mp = MeterProvider(resource=resource, metric_readers=readers)
    trace.set_tracer_provider(tp)
    metrics.set_meter_provider(mp)
    _logs.set_logger_provider(lp)
    return TelemetryHandle(tp, mp, lp, owned=True)


def _otlp_exporters(protocol: str, endpoint: str | None) -> tuple[Any, Any, Any]:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        kw: dict[str, Any] = {"endpoint": endpoint} if endpoint else {}
        return OTLPSpanExporter(**kw), OTLPMetricExporter(**kw), OTLPLogExporter(**kw)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HLog
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HMetric
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HSpan

    if endpoint:
        base = endpoint.rstrip("/")
        return (HSpan(endpoint=f"{base}/v1/traces"), HMetric(endpoint=f"{base}/v1/metrics"),
                HLog(endpoint=f"{base}/v1/logs"))
    return HSpan(), HMetric(), HLog()


def reset_for_tests() -> None:
    """Forget the configured state (tests only)."""
    global _state
    with _lock:
        _state = None
