"""OTLP/JSON trace documents from any producer, normalised to the bundle's canonical form.

Accepted: one ``ExportTraceServiceRequest`` document, or one per line (the collector's ``file``
exporter, agenttrail's spool); the protobuf JSON mapping as Tempo and ``MessageToJson`` write it
(``snake_case`` or ``camelCase`` keys, base64 ids, enum names such as ``SPAN_KIND_CLIENT``,
``instrumentationLibrarySpans``). Written out: camelCase keys, lower-case hex ids, integer enums,
nanosecond times as strings. Fields this module does not know are kept as they are.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

_HEX: Final = re.compile(r"^[0-9a-fA-F]+$")
_SNAKE: Final = re.compile(r"_([a-z])")
_KINDS: Final = {"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2,
                 "SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
_STATUS: Final = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def camel(key: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), key) if "_" in key else key


def hex_id(value: Any, nbytes: int) -> str:
    """A trace (16 bytes) or span (8 bytes) id as lower-case hex, from hex or base64 text."""
    if not isinstance(value, str) or not value:
        return ""
    if len(value) == nbytes * 2 and _HEX.match(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == nbytes:
        return raw.hex()
    if _HEX.match(value) and len(value) < nbytes * 2:  # Jaeger drops leading zeros
        return value.lower().rjust(nbytes * 2, "0")
    return value.lower()


def _value(v: Any) -> Any:
    if not isinstance(v, Mapping):
        return v
    out: dict[str, Any] = {}
    for k, x in v.items():
        k = camel(k)
        if k == "intValue":
            out[k] = str(x)
        elif k == "arrayValue" and isinstance(x, Mapping):
            out[k] = {"values": [_value(i) for i in x.get("values") or []]}
        elif k == "kvlistValue" and isinstance(x, Mapping):
            out[k] = {"values": key_values(x.get("values") or [])}
        else:
            out[k] = x
    return out


def key_values(attrs: Any) -> list[dict[str, Any]]:
    if not isinstance(attrs, list):
        return []
    return [{"key": a.get("key"), "value": _value(a.get("value") or {})}
            for a in attrs if isinstance(a, Mapping)]


def _enum(value: Any, table: Mapping[str, int]) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return table.get(value, int(value) if value.isdigit() else 0)
    return 0


def normalise_span(span: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {camel(k): v for k, v in span.items()}
    out["traceId"] = hex_id(out.get("traceId"), 16)
    out["spanId"] = hex_id(out.get("spanId"), 8)
    parent = hex_id(out.get("parentSpanId"), 8)
    if parent:
        out["parentSpanId"] = parent
    else:
        out.pop("parentSpanId", None)
    out["kind"] = _enum(out.get("kind"), _KINDS)
    for t in ("startTimeUnixNano", "endTimeUnixNano"):
        out[t] = str(out.get(t) or 0)
    out["attributes"] = key_values(out.get("attributes"))
    status = {camel(k): v for k, v in (out.get("status") or {}).items()}
    status["code"] = _enum(status.get("code"), _STATUS)
    out["status"] = status
    if out.get("events"):
        out["events"] = [{**{camel(k): v for k, v in e.items()},
                          "timeUnixNano": str(e.get("timeUnixNano") or e.get("time_unix_nano") or 0),
                          "attributes": key_values(e.get("attributes"))}
                         for e in out["events"] if isinstance(e, Mapping)]
    if out.get("links"):
        out["links"] = [{**{camel(k): v for k, v in ln.items()},
                         "traceId": hex_id(ln.get("traceId") or ln.get("trace_id"), 16),
                         "spanId": hex_id(ln.get("spanId") or ln.get("span_id"), 8),
                         "attributes": key_values(ln.get("attributes"))}
                        for ln in out["links"] if isinstance(ln, Mapping)]
    return out


def resource_spans(doc: Mapping[str, Any]) -> list[Any]:
    """The resourceSpans of a document in any accepted shape (OTLP, Tempo v1 ``batches``, Tempo v2
    ``{"trace": {...}}``)."""
    if isinstance(doc.get("trace"), Mapping):
        doc = doc["trace"]
    found = doc.get("resourceSpans", doc.get("resource_spans", doc.get("batches")))
    return found if isinstance(found, list) else []


def is_otlp(doc: Any) -> bool:
    return isinstance(doc, Mapping) and bool(
        {"resourceSpans", "resource_spans", "batches"} & set(doc)
        or (isinstance(doc.get("trace"), Mapping) and {"resourceSpans", "resource_spans", "batches"}
            & set(doc["trace"])))


def normalise_document(doc: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """One canonical document per resource in ``doc`` (small documents keep a reader's memory low)."""
    for rs in resource_spans(doc):
        if not isinstance(rs, Mapping):
            continue
        rs = {camel(k): v for k, v in rs.items()}
        resource = {camel(k): v for k, v in (rs.get("resource") or {}).items()}
        resource["attributes"] = key_values(resource.get("attributes"))
        scopes_in = rs.pop("scopeSpans", None) or rs.pop("instrumentationLibrarySpans", None) or []
        scopes = []
        for ss in scopes_in:
            if not isinstance(ss, Mapping):
                continue
            ss = {camel(k): v for k, v in ss.items()}
            scope = ss.pop("scope", None) or ss.pop("instrumentationLibrary", None) or {}
            ss["scope"] = {camel(k): v for k, v in scope.items()}
            ss["spans"] = [normalise_span(s) for s in ss.get("spans") or [] if isinstance(s, Mapping)]
            scopes.append(ss)
        yield {"resourceSpans": [{**rs, "resource": resource, "scopeSpans": scopes}]}


def attr_dict(attrs: list[dict[str, Any]]) -> dict[str, Any]:
    """Canonical key-values as a plain dict (scalars as Python values)."""
    out: dict[str, Any] = {}
    for a in attrs:
        v = a.get("value") or {}
        for k in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
            if k in v:
                out[a["key"]] = v[k]
                break
        else:
            if "intValue" in v:
                try:
                    out[a["key"]] = int(v["intValue"])
                except (TypeError, ValueError):
                    out[a["key"]] = v["intValue"]
            elif v:
                out[a["key"]] = v
    return out
