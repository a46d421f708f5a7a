"""OTLP/JSON attribute values, shared by the span recorder, the importers and test builders (stdlib)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def any_value(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP/JSON ``AnyValue`` (int64 as a string, as proto3 JSON spells it)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes):
        return {"stringValue": value.decode("utf-8", "replace")}
    if isinstance(value, Sequence):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def key_values(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Attributes as an OTLP/JSON ``KeyValue`` list."""
    if not attributes:
        return []
    return [{"key": k, "value": any_value(v)} for k, v in attributes.items()]
