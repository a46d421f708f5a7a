"""The flight recorder: a run's spans and events spooled to disk as they happen.

The spool lives under ``<workspace>/.agenttrail/spool/<run_id>/`` and holds ``run.json`` (identity,
written at start), ``events.jsonl`` and ``trace.jsonl`` (OTLP/JSON, one document per line). Every event
line is written and flushed to the OS as it happens, so a worker killed with SIGKILL loses at most the
line being written; spans are written by the spool thread (see ``_SpanWriter``), each batch with one
write and one flush. Memory stays bounded because nothing accumulates in the process. Files rotate at
``max_file_bytes`` (``events.jsonl`` → ``events.1.jsonl`` …) and the oldest rotations beyond
``max_files`` are deleted, so the spool is bounded on disk too (the manifest records the loss).
"""

from __future__ import annotations

import atexit
import collections
import contextvars
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from opentelemetry import trace as trace_api
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanKind, Status

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

    def write_lines(self, lines: list[str]) -> None:
        """Append several lines with one write and one flush (rotating where ``write`` would)."""
        # caller holds self.lock
        chunk: list[str] = []
        size = self._size
        for line in lines:
            chunk.append(line)
            size += len(line) + 1
            if size >= self.max_bytes:
                self._fh.write("\n".join(chunk) + "\n")
                self._fh.flush()
                chunk = []
                self._rotate()
                size = 0
        if chunk:
            self._fh.write("\n".join(chunk) + "\n")
            self._fh.flush()
        self._size = size

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


#: What the calling thread queues for an ended span: its spool and the parts the encoder reads
#: (spool, name, trace id, span id, parent span id, kind, start, end, attributes, status, events,
#: resource, scope). One tuple instead of the SDK's ReadableSpan and the objects it holds keeps the
#: queue from feeding the cyclic GC: a queued ReadableSpan is ~8 tracked objects, which made the
#: calling thread run young and full collections the run without a recorder never needs.
_Ended = tuple[
    "Spool", str, "int | None", "int | None", "int | None", SpanKind, "int | None", "int | None",
    "Mapping[str, Any]", Status, "Sequence[Event]", Resource, "InstrumentationScope | None"]


class _SpanWriter:
    """Encodes ended spans as OTLP/JSON and appends them to their spool, off the caller's thread.

    Encoding a span costs more than creating it, so the calling thread only queues its parts; a
    daemon thread writes the queue every ``interval`` seconds, one write and one flush per spool and
    batch. Closing or sealing a spool drains the queue first, so a finished run's trace is complete. A
    worker killed with SIGKILL loses the spans of at most the last ``interval`` (events are still
    written synchronously: the event log is the record recovery relies on). The queue is bounded:
    past ``max_pending`` spans the caller writes the queue itself (back-pressure) instead of holding
    more in memory.
    """

    def __init__(self, interval: float = 0.1, max_pending: int = 4096) -> None:
        self.interval = interval
        self.max_pending = max_pending
        self._pending: collections.deque[_Ended] = collections.deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._drain_lock = threading.Lock()

    def submit(self, ended: _Ended) -> None:
        if len(self._pending) >= self.max_pending:
            # back-pressure: a burst faster than the thread writes is written by the caller, so
            # memory stays bounded and no span is lost
            self.drain()
        self._pending.append(ended)
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
        pending = self._pending
        with self._drain_lock:
            while pending:
                batch: dict[Spool, list[str]] = {}
                for _ in range(min(len(pending), _BATCH)):
                    ended = pending.popleft()
                    try:
                        line = ended[0].span_line(ended)
                    except Exception:  # noqa: BLE001 - never raise into the SDK / user code
                        _spool_error()
                        continue
                    lines = batch.get(ended[0])
                    if lines is None:
                        batch[ended[0]] = [line]
                    else:
                        lines.append(line)
                for spool, lines in batch.items():
                    try:
                        spool.write_trace_lines(lines)
                    except Exception:  # noqa: BLE001
                        _spool_error()


_BATCH = 128  # spans encoded before they are written (one write + flush per spool and batch)


def _spool_error() -> None:
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
        self._prefixes: dict[int, tuple[InstrumentationScope | None, str, str]] = {}
        self.logs: _RotatingLines | None = None  # created by the first log record

    def write_event(self, record: dict[str, Any]) -> int:
        """Assign the next ``seq`` and append the event; returns the seq."""
        with self.events.lock:
            self._seq += 1
            record["seq"] = self._seq
            self.events.write(json.dumps(record, separators=(",", ":"), default=str))
            return self._seq

    def span_line(self, ended: _Ended) -> str:
        """One trace.jsonl line: an ExportTraceServiceRequest holding the span (writer thread)."""
        (_, name, trace_id, span_id, parent_id, kind, start, end, attributes, status, events,
         resource, scope) = ended
        around = self._prefixes.get(id(scope))
        if around is None or around[0] is not scope:  # ids of dead scopes are reused
            around = (scope, *_otlp_json.document_prefix(resource, scope))
            self._prefixes[id(scope)] = around
        body = _otlp_json.span_json(name, trace_id, span_id, parent_id, kind, start, end,
                                    attributes, status, events)
        return around[1] + body + around[2]

    def write_span(self, span: ReadableSpan) -> None:
        """Encode and append one ended span now (the writer thread queues them instead)."""
        self.write_trace_lines([self.span_line(_ended(self, span, _attribute_dict(span)))])

    def write_trace_lines(self, lines: list[str]) -> None:
        with self.trace.lock:
            self.trace.write_lines(lines)

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


#: The run whose ``with`` block the caller is in (``_run.current_run()`` reads it). Defined here so
#: ``on_start`` reads it without an import: the Run class lives in _run, which imports this module.
current_run_var: contextvars.ContextVar[Any] = contextvars.ContextVar("agenttrail_run", default=None)


def _ended(spool: Spool, span: Any, attributes: Mapping[str, Any]) -> _Ended:
    """The parts of an ended span the encoder needs, read on the calling thread.

    Read from the ReadableSpan's fields directly: its properties cost ~60 ns each and ``events``
    copies the list under a lock (~0.4 µs); falls back to the properties if the SDK's fields are
    named otherwise.
    """
    try:
        ctx, parent, events = span._context, span._parent, span._events._dq
        return (spool, span._name, ctx.trace_id, ctx.span_id,
                parent.span_id if parent is not None else None, span._kind, span._start_time,
                span._end_time, attributes, span._status, tuple(events) if events else (),
                span._resource, span._instrumentation_scope)
    except AttributeError:
        return _ended_public(spool, span, attributes)


def _ended_public(spool: Spool, span: ReadableSpan, attributes: Mapping[str, Any]) -> _Ended:
    ctx = span.context
    parent = span.parent
    return (spool, span.name, ctx.trace_id if ctx else None, ctx.span_id if ctx else None,
            parent.span_id if parent is not None else None, span.kind, span.start_time,
            span.end_time, attributes, span.status, span.events, span.resource,
            span.instrumentation_scope)


def _attribute_dict(span: Any) -> Mapping[str, Any]:
    """The ended span's attributes as the SDK's own dict (no copy, no read-only proxy).

    ``span.attributes`` wraps the SDK's ``BoundedAttributes`` in a ``MappingProxyType``: every
    ``get`` goes through two Python-level mappings, and a missing key costs a caught ``KeyError``.
    The dict under it no longer changes once the span has ended. Falls back to ``span.attributes``
    if the SDK keeps its attributes some other way.
    """
    try:
        inner = span._attributes._dict
    except AttributeError:
        inner = None
    if type(inner) is dict:
        return inner
    return span.attributes or {}


def _open_attributes(span: Any, adding: int) -> dict[str, Any] | None:
    """The live span's own attribute dict, when ``adding`` clean values may go straight into it.

    ``Span.set_attributes`` takes the span's lock and the attributes' lock and re-validates every
    value (~2 µs for two values, ~4 µs for five). For values known to be clean and a span no other
    thread ends meanwhile (a span in ``on_start``; an ``@llm`` span its own call is ending), the
    result is the same when no limit applies (attribute count, value length): None otherwise, and
    then the caller uses ``set_attributes``.
    """
    try:
        attrs = span._attributes
        inner = attrs._dict
        if (type(attrs) is not BoundedAttributes or type(inner) is not dict
                or attrs.max_value_len is not None or attrs._immutable
                or (attrs.maxlen is not None and len(inner) + adding > attrs.maxlen)):
            return None
    except AttributeError:
        return None
    return inner


def _stamp(span: Span, identity: tuple[tuple[str, str], ...]) -> bool:
    """Add the run identity (str values: ``Run.stamp_items``) to a span that has just started, as
    ``set_attributes`` would; False when the caller must use ``set_attributes`` instead."""
    inner = _open_attributes(span, len(identity))
    if inner is None:
        return False
    for key, value in identity:
        if key in inner:
            del inner[key]  # an existing key moves to the end, as in set_attributes
        inner[key] = value
    return True


_PLAIN: Final = frozenset({str, int, float, bool})


def set_plain_attributes(span: trace_api.Span, attributes: Mapping[str, Any]) -> None:
    """``span.set_attributes(attributes)`` for a span only its own call ends (see _open_attributes).

    Values of exactly str, int, float, bool or a tuple of str go in as they are (the SDK would keep
    them unchanged); anything else takes ``set_attributes``.
    """
    inner = _open_attributes(span, len(attributes))
    if inner is not None:
        for value in attributes.values():
            t = type(value)
            if t not in _PLAIN and not (t is tuple and all(type(v) is str for v in value)):
                inner = None
                break
    if inner is None:
        span.set_attributes(attributes)
        return
    for key, value in attributes.items():
        if key in inner:
            del inner[key]
        inner[key] = value


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

    # on_start and on_end run for every span of the process, on its thread: kept to a few dict
    # operations (bench/bench_bundle.py measures them).
    # The SDK calls span processors without a guard: whatever they raise reaches the code that
    # started or ended the span, i.e. the user's. Hence the try blocks (free until something raises).
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            run = current_run_var.get()
            if run is not None:
                items = run.stamp_items
                if items is None or not _stamp(span, items):
                    span.set_attributes(run.span_identity)
        except Exception:  # noqa: BLE001 - never raise into the SDK / user code
            from ._runtime import internal_error

            internal_error("stamping a span with the run")

    def on_end(self, span: ReadableSpan) -> None:
        try:
            attrs = _attribute_dict(span)
            if self._llm_spans:
                self._note_delegation(span, attrs)
            run_id = attrs.get(names.RUN_ID)
            if run_id is None:
                return
            spool = self._spools.get(run_id if type(run_id) is str else str(run_id))
            if spool is not None:
                _writer.submit(_ended(spool, span, attrs))
        except Exception:  # noqa: BLE001 - never raise into the SDK / user code
            from ._runtime import internal_error

            internal_error("queueing an ended span")

    def _note_delegation(self, span: ReadableSpan, attrs: Mapping[str, Any]) -> None:
        parent = span.parent
        if (
            parent is not None
            and parent.span_id in self._llm_spans
            and attrs.get(names.USAGE_INPUT_TOKENS) is not None
            and (span.instrumentation_scope is None or span.instrumentation_scope.name != "agenttrail")
        ):
            scope = span.instrumentation_scope
            self._llm_spans[parent.span_id] = scope.name if scope else "unknown"

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        _writer.drain()
        return True
