"""Encode SDK spans as OTLP/JSON (hex ids, nanosecond strings), one document per line.

:func:`span_dict` is the reference shape; :func:`span_json` writes the same text directly (the spool
writer's hot path: no per-attribute dicts, one ``str.join``). Tests hold the two to the same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii as _quote  # what json.dumps uses (C)
from typing import Any, Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..bundle.otlp import any_value, key_values

__all__ = ["any_value", "attributes_json", "document_prefix", "key_values", "span_dict", "span_json"]

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


#: ``'{"key":"<k>","value":'`` per attribute key (keys repeat: a few dozen names in practice).
_key_heads: dict[str, str] = {}
_MAX_KEY_HEADS = 4096


def _float_json(value: float) -> str:
    """A float as ``json.dumps`` spells it (``NaN``/``Infinity`` included)."""
    if math.isnan(value):
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return float.__repr__(value)


_INF = float("inf")
# Enum ``.value`` is a descriptor call: the few kinds and status codes are spelled once
_KIND_JSON: Final = {k: int.__repr__(k.value + _KIND_OFFSET) for k in SpanKind}
_CODE_JSON: Final = {c: int.__repr__(c.value) for c in StatusCode}


def _scalar_json(value: Any) -> str:
    return int.__repr__(value) if type(value) is int else json.dumps(value)


def attributes_json(attributes: Mapping[str, Any]) -> str:
    """``json.dumps(key_values(attributes))`` (compact), built without the intermediate dicts.

    The common value types (str, int, float, bool) are spelled directly; anything else goes through
    :func:`any_value` and ``json.dumps``, so the text is the same either way.
    """
    parts: list[str] = []
    heads = _key_heads
    for k, v in attributes.items():
        head = heads.get(k)
        if head is None:
            if type(k) is not str:
                return json.dumps(key_values(attributes), separators=(",", ":"))
            head = '{"key":' + _quote(k) + ',"value":'
            if len(heads) < _MAX_KEY_HEADS:
                heads[k] = head
        t = type(v)
        if t is str:
            parts.append(head + '{"stringValue":' + _quote(v) + "}}")
        elif t is bool:
            parts.append(head + ('{"boolValue":true}}' if v else '{"boolValue":false}}'))
        elif t is int:
            parts.append(head + '{"intValue":"' + int.__repr__(v) + '"}}')
        elif t is float:
            parts.append(head + '{"doubleValue":' + _float_json(v) + "}}")
        else:
            parts.append(head + json.dumps(any_value(v), separators=(",", ":")) + "}")
    return "[" + ",".join(parts) + "]"


def span_json(name: str, trace_id: int | None, span_id: int | None, parent_id: int | None,
              kind: SpanKind, start: int | None, end: int | None, attributes: Mapping[str, Any] | None,
              status: Status, events: Sequence[Event]) -> str:
    """The compact JSON text of :func:`span_dict` for a span's parts (the spool writer's encoder)."""
    valid = trace_id is not None
    out = [
        '{"traceId":"', format(trace_id, "032x") if valid else "",
        '","spanId":"', format(span_id, "016x") if valid else "",
        '","name":', _quote(name) if type(name) is str else json.dumps(name),
        ',"kind":', _KIND_JSON.get(kind) or int.__repr__(kind.value + _KIND_OFFSET),
        ',"startTimeUnixNano":', _quote(str(start or 0)),
        ',"endTimeUnixNano":', _quote(str(end or 0)),
        ',"attributes":', attributes_json(attributes) if attributes else "[]",
        ',"status":{"code":', _CODE_JSON.get(status.status_code) or _scalar_json(status.status_code.value),
    ]
    if status.description:
        out.append(',"message":')
        desc = status.description
        out.append(_quote(desc) if type(desc) is str else json.dumps(desc))
    out.append("}")
    if parent_id is not None:
        out.append(',"parentSpanId":"' + format(parent_id, "016x") + '"')
    if events:
        out.append(',"events":')
        out.append(json.dumps([{"timeUnixNano": str(e.timestamp), "name": e.name,
                                "attributes": key_values(e.attributes)} for e in events],
                              separators=(",", ":")))
    out.append("}")
    return "".join(out)
