"""Encode SDK spans as OTLP/JSON (hex ids, nanosecond strings), one document per line."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from ..bundle.otlp import any_value, key_values

__all__ = ["any_value", "document_prefix", "key_values", "span_dict"]

# SDK SpanKind enum (INTERNAL=0 ...) → OTLP enum (UNSPECIFIED=0, INTERNAL=1, SERVER=2, CLIENT=3, ...).
_KIND_OFFSET = 1


def span_dict(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.context
    out: dict[str, Any] = {
        "traceId": format(ctx.trace_id, "032x") if ctx else "",
        "spanId": format(ctx.span_id, "016x") if ctx else "",
        "name": span.name,
        "kind": span.kind.value + _KIND_OFFSET,
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": key_values(span.attributes),
        "status": {"code": span.status.status_code.value},
    }
    if span.parent is not None:
        out["parentSpanId"] = format(span.parent.span_id, "016x")
    if span.status.description:
        out["status"]["message"] = span.status.description
    if span.events:
        out["events"] = [
            {
                "timeUnixNano": str(e.timestamp),
                "name": e.name,
                "attributes": key_values(e.attributes),
            }
            for e in span.events
        ]
    return out


def document_prefix(resource: Resource, scope: InstrumentationScope | None) -> tuple[str, str]:
    """The text around the spans of one ExportTraceServiceRequest, cached per resource/scope."""
    res = json.dumps({"attributes": key_values(resource.attributes)}, separators=(",", ":"))
    sc = {"name": scope.name if scope else "", "version": (scope.version or "") if scope else ""}
    prefix = (
        '{"resourceSpans":[{"resource":' + res + ',"scopeSpans":[{"scope":'
        + json.dumps(sc, separators=(",", ":")) + ',"spans":['
    )
    return prefix, "]}]}]}"
