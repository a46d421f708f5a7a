"""Jaeger trace JSON (the query API's and the UI's "Download JSON" shape) → OTLP/JSON documents.

``{"data": [{"traceID", "spans": [...], "processes": {"p1": {"serviceName", "tags"}}}]}``, or a bare
list of such traces. Jaeger's own encoding of OpenTelemetry data is undone: ``span.kind``,
``otel.status_code`` / ``otel.status_description`` / ``error`` and ``otel.scope.name`` (or
``otel.library.name``) tags become the span's kind, status and scope; logs become span events with
the ``event`` field as their name. Every other tag is kept as an attribute.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from .otlp_json import hex_id

_KINDS: Final = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_CONSUMED: Final = frozenset({"span.kind", "otel.status_code", "otel.status_description", "otel.scope.name",
                              "otel.scope.version", "otel.library.name", "otel.library.version"})


def is_jaeger(doc: Any) -> bool:
    traces = doc.get("data") if isinstance(doc, Mapping) else doc
    return (isinstance(traces, list) and bool(traces) and isinstance(traces[0], Mapping)
            and "spans" in traces[0] and "traceID" in traces[0])


def _any(tag: Mapping[str, Any]) -> dict[str, Any]:
    t, v = str(tag.get("type", "string")).lower(), tag.get("value")
    if t == "bool":
        return {"boolValue": bool(v)}
    if t == "int64":
        return {"intValue": str(v)}
    if t == "float64":
        return {"doubleValue": float(v) if v is not None else 0.0}
    if t == "binary":
        return {"bytesValue": v}
    return {"stringValue": "" if v is None else str(v)}


def _kvs(tags: Any, skip: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    return [{"key": t["key"], "value": _any(t)} for t in tags or []
            if isinstance(t, Mapping) and "key" in t and t["key"] not in skip]


def _ns(us: Any) -> str:
    try:
        return str(int(us) * 1000)
    except (TypeError, ValueError):
        return "0"


def _span(s: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, str]]:
    tags = {t.get("key"): t.get("value") for t in s.get("tags") or [] if isinstance(t, Mapping)}
    start = int(s.get("startTime") or 0)
    out: dict[str, Any] = {
        "traceId": hex_id(s.get("traceID"), 16),
        "spanId": hex_id(s.get("spanID"), 8),
        "name": s.get("operationName", ""),
        "kind": _KINDS.get(str(tags.get("span.kind", "internal")).lower(), 1),
        "startTimeUnixNano": _ns(start),
        "endTimeUnixNano": _ns(start + int(s.get("duration") or 0)),
        # ``error: true`` is Jaeger's mark of an error status, not an attribute of the span
        "attributes": _kvs([t for t in s.get("tags") or [] if not (
            isinstance(t, Mapping) and t.get("key") == "error" and t.get("value") is True)], _CONSUMED),
    }
    for ref in s.get("references") or []:
        if isinstance(ref, Mapping) and ref.get("refType") == "CHILD_OF":
            out["parentSpanId"] = hex_id(ref.get("spanID"), 8)
            break
    status_code = str(tags.get("otel.status_code", "")).upper()
    code = 2 if status_code == "ERROR" or tags.get("error") in (True, "true") else (
        1 if status_code == "OK" else 0)
    status: dict[str, Any] = {"code": code}
    if tags.get("otel.status_description"):
        status["message"] = str(tags["otel.status_description"])
    out["status"] = status
    events = []
    for log in s.get("logs") or []:
        if not isinstance(log, Mapping):
            continue
        fields = log.get("fields") or []
        name = next((str(f.get("value")) for f in fields if isinstance(f, Mapping)
                     and f.get("key") == "event"), "log")
        events.append({"timeUnixNano": _ns(log.get("timestamp")), "name": name,
                       "attributes": _kvs(fields, frozenset({"event"}))})
    if events:
        out["events"] = events
    scope = (str(tags.get("otel.scope.name") or tags.get("otel.library.name") or ""),
             str(tags.get("otel.scope.version") or tags.get("otel.library.version") or ""))
    return out, scope


def to_otlp(doc: Any) -> Iterator[dict[str, Any]]:
    """One OTLP document per (trace, process)."""
    traces = doc.get("data") if isinstance(doc, Mapping) else doc
    for trace in traces or []:
        if not isinstance(trace, Mapping):
            continue
        processes = trace.get("processes") or {}
        grouped: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
        for s in trace.get("spans") or []:
            if not isinstance(s, Mapping):
                continue
            span, scope = _span(s)
            grouped.setdefault(str(s.get("processID", "")), {}).setdefault(scope, []).append(span)
        for pid, scopes in grouped.items():
            proc = processes.get(pid) or {}
            res = [{"key": "service.name", "value": {"stringValue": str(proc.get("serviceName", ""))}},
                   *_kvs(proc.get("tags"))]
            yield {"resourceSpans": [{
                "resource": {"attributes": res},
                "scopeSpans": [{"scope": {"name": n, "version": v}, "spans": spans}
                               for (n, v), spans in scopes.items()]}]}
