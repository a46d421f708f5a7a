"""The flight recorder: a run's spans and events spooled to disk as they happen.

The spool lives under ``<workspace>/.agenttrail/spool/<run_id>/`` and holds ``run.json`` (identity,
written at start), ``events.jsonl`` and ``trace.jsonl`` (OTLP/JSON, one document per line). Every line is
written and flushed to the OS as it happens, so a worker killed with SIGKILL loses at most the line
being written; memory stays bounded because nothing accumulates in the process. Files rotate at
``max_file_bytes`` (``events.jsonl`` → ``events.1.jsonl`` …) and the oldest rotations beyond
``max_files`` are deleted, so the spool is bounded on disk too (the manifest records the loss).
"""

from __future__ import annotations

import atexit
import collections
import json
import threading
from pathlib import Path
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from .. import names
from ..bundle.spool import last_seq
from . import _otlp_json

SPOOL_DIRNAME = ".agenttrail/spool"


class _RotatingLines:
    """An append-only JSON Lines file with size-based rotation; thread-safe."""

    def __init__(self, path: Path, max_bytes: int, max_files: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.lock = threading.Lock()
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._size = self._fh.tell()
        self.dropped_files = 0

    def write(self, line: str) -> None:
        # caller holds self.lock
        self._fh.write(line)
        self._fh.write("\n")
        self._fh.flush()
        self._size += len(line) + 1
        if self._size >= self.max_bytes:
            self._rotate()

    def _rotate(self) -> None:
        self._fh.close()
        stem, suffix = self.path.name.split(".", 1)
        # shift events.(n).jsonl up by one; drop the oldest past max_files
        for n in range(self.max_files, 0, -1):
            src = self.path.with_name(f"{stem}.{n}.{suffix}")
            if src.exists():
                if n >= self.max_files:
                    src.unlink()
                    self.dropped_files += 1
                else:
                    src.rename(self.path.with_name(f"{stem}.{n + 1}.{suffix}"))
        self.path.rename(self.path.with_name(f"{stem}.1.{suffix}"))
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        self._size = 0

    def close(self) -> None:
        with self.lock:
            if not self._fh.closed:
                self._fh.close()


class _SpanWriter:
    """Encodes ended spans as OTLP/JSON and appends them to their spool, off the caller's thread.

    Encoding a span costs far more than creating it (~60 µs against ~30 µs), so the calling thread
    only queues it; a daemon thread writes the queue every ``interval`` seconds. Closing or sealing a
    spool drains the queue first, so a finished run's trace is complete. A worker killed with SIGKILL
    loses the spans of at most the last ``interval`` (events are still written synchronously: the event
    log is the record recovery relies on). The queue is bounded: past ``max_pending`` spans the caller
    writes the queue itself (back-pressure) instead of holding more in memory.
    """

    def __init__(self, interval: float = 0.1, max_pending: int = 4096) -> None:
        self.interval = interval
        self.max_pending = max_pending
        self._pending: collections.deque[tuple[Spool, ReadableSpan]] = collections.deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._drain_lock = threading.Lock()

    def submit(self, spool: Spool, span: ReadableSpan) -> None:
        if len(self._pending) >= self.max_pending:
            # back-pressure: a burst faster than the thread writes is written by the caller, so
            # memory stays bounded and no span is lost
            self.drain()
        self._pending.append((spool, span))
        if self._thread is None:
            self._start()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                t = threading.Thread(target=self._loop, name="agenttrail-spool", daemon=True)
                t.start()
                self._thread = t
                atexit.register(self.drain)

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            self.drain()

    def drain(self) -> None:
        """Write everything queued (called by the thread, and by close/seal/force_flush)."""
        with self._drain_lock:
            while self._pending:
                spool, span = self._pending.popleft()
                try:
                    spool.write_span(span)
                except Exception:  # noqa: BLE001 - never raise into the SDK / user code
                    from ._runtime import internal_error

                    internal_error("spooling a span")


_writer = _SpanWriter()


class Spool:
    """One run's spool directory."""

    def __init__(
        self, directory: Path, *, max_file_bytes: int = 256 << 20, max_files: int = 8
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.events = _RotatingLines(directory / "events.jsonl", max_file_bytes, max_files)
        self.trace = _RotatingLines(directory / "trace.jsonl", max_file_bytes, max_files)
        self._seq = last_seq(directory)
        self._prefixes: dict[int, tuple[str, str]] = {}
        self.logs: _RotatingLines | None = None  # created by the first log record

    def write_event(self, record: dict[str, Any]) -> int:
        """Assign the next ``seq`` and append the event; returns the seq."""
        with self.events.lock:
            self._seq += 1
            record["seq"] = self._seq
            self.events.write(json.dumps(record, separators=(",", ":"), default=str))
            return self._seq

    def write_span(self, span: ReadableSpan) -> None:
        scope: InstrumentationScope | None = span.instrumentation_scope
        key = id(scope)
        body = json.dumps(_otlp_json.span_dict(span), separators=(",", ":"))
        with self.trace.lock:
            around = self._prefixes.get(key)
            if around is None:
                around = _otlp_json.document_prefix(span.resource, scope)
                self._prefixes[key] = around
            self.trace.write(around[0] + body + around[1])

    def write_log(self, record: ReadWriteLogRecord) -> None:
        """Append one log record as an OTLP/JSON ExportLogsServiceRequest line (logs.jsonl)."""
        lr = record.log_record
        body: dict[str, Any] = {
            "timeUnixNano": str(lr.timestamp or lr.observed_timestamp or 0),
            "observedTimeUnixNano": str(lr.observed_timestamp or 0),
            "attributes": _otlp_json.key_values(lr.attributes),
        }
        if lr.severity_number is not None:
            body["severityNumber"] = lr.severity_number.value
        if lr.severity_text:
            body["severityText"] = lr.severity_text
        if lr.body is not None:
            body["body"] = _otlp_json.any_value(lr.body)
        if lr.event_name:
            body["eventName"] = lr.event_name
        if lr.trace_id:
            body["traceId"] = format(lr.trace_id, "032x")
        if lr.span_id:
            body["spanId"] = format(lr.span_id, "016x")
        scope = record.instrumentation_scope
        doc = {"resourceLogs": [{
            "resource": {"attributes": _otlp_json.key_values(
                record.resource.attributes if record.resource else None)},
            "scopeLogs": [{"scope": {"name": scope.name if scope else "",
                                     "version": (scope.version or "") if scope else ""},
                           "logRecords": [body]}]}]}
        line = json.dumps(doc, separators=(",", ":"), default=str)
        if self.logs is None:
            self.logs = _RotatingLines(self.directory / "logs.jsonl", self.events.max_bytes,
                                       self.events.max_files)
        with self.logs.lock:
            self.logs.write(line)

    @property
    def dropped_files(self) -> int:
        return self.events.dropped_files + self.trace.dropped_files

    def flush(self) -> None:
        """Write the spans still queued for the spool thread."""
        _writer.drain()

    def close(self) -> None:
        _writer.drain()
        self.events.close()
        self.trace.close()
        if self.logs is not None:
            self.logs.close()


class RecorderLogProcessor(LogRecordProcessor):
    """Spools a run's OpenTelemetry log records that events.jsonl does not already hold.

    Run events are mirrored as log records (``agenttrail.event.type``); those are skipped. What is
    kept: the GenAI exception and inference-details events and any log record carrying the run id.
    """

    def __init__(self, recorder: RecorderProcessor) -> None:
        self._recorder = recorder

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        attrs = log_record.log_record.attributes or {}
        run_id = attrs.get(names.RUN_ID)
        if run_id is None or names.EVENT_TYPE in attrs:
            return
        spool = self._recorder.spool_for(str(run_id))
        if spool is None:
            return
        try:
            spool.write_log(log_record)
        except Exception:  # noqa: BLE001 - never raise into the SDK / user code
            from ._runtime import internal_error

            internal_error("spooling a log record")

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _current_run_var() -> Any:
    """The run context variable (imported lazily: _run imports this module)."""
    global _run_var
    if _run_var is None:
        from ._run import _current

        _run_var = _current
    return _run_var


_run_var: Any = None


class RecorderProcessor(SpanProcessor):
    """Stamps run identity on every span started inside a run, and spools it when it ends.

    Stamping here (not in the decorators) also covers spans from other instrumentations — e.g. the
    official OpenAI instrumentation's ``chat`` spans get ``gen_ai.conversation.id`` too.
    """

    def __init__(self) -> None:
        self._spools: dict[str, Spool] = {}
        self._llm_spans: dict[int, str | None] = {}
        self._lock = threading.Lock()

    def attach(self, run_id: str, spool: Spool) -> None:
        with self._lock:
            self._spools[run_id] = spool

    def spool_for(self, run_id: str) -> Spool | None:
        return self._spools.get(run_id)

    def detach(self, run_id: str) -> None:
        with self._lock:
            self._spools.pop(run_id, None)

    # -- LLM span de-duplication: an official instrumentation span nested in our @llm span owns the
    # token counts; we record which library did so and do not count the tokens twice.
    def watch_llm(self, span_id: int) -> None:
        self._llm_spans[span_id] = None

    def delegated(self, span_id: int) -> str | None:
        return self._llm_spans.pop(span_id, None)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        run = _current_run_var().get()
        if run is not None:
            span.set_attributes(run.span_identity)  # one call: the SDK takes its lock once

    def on_end(self, span: ReadableSpan) -> None:
        attrs = span.attributes or {}
        if (
            span.parent is not None
            and span.parent.span_id in self._llm_spans
            and attrs.get(names.USAGE_INPUT_TOKENS) is not None
            and (span.instrumentation_scope is None or span.instrumentation_scope.name != "agenttrail")
        ):
            scope = span.instrumentation_scope
            self._llm_spans[span.parent.span_id] = scope.name if scope else "unknown"
        run_id = attrs.get(names.RUN_ID)
        if run_id is None:
            return
        spool = self._spools.get(str(run_id))
        if spool is not None:
            _writer.submit(spool, span)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        _writer.drain()
        return True
