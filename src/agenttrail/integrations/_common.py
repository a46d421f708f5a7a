"""Helpers shared by the framework integrations: JSON-safe values, scrubbing, names.

The names the integrations emit are spelled in :mod:`agenttrail.names` like every other name.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import enum
import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._secrets import scrub

# Names live in agenttrail.names (one module spells every emitted name); re-exported for the
# integration modules that import them from here.
from ..names import (
    EV_APPROVAL_DECIDED,
    EV_APPROVAL_REQUESTED,
    EV_CONTEXT_HANDOFF,
    EV_RATE_LIMITED,
    HANDOFF_FROM,
    HANDOFF_TO,
    KIND_GRAPH,
    KIND_HANDOFF,
    KIND_SUPERSTEP,
    LANGGRAPH_CHECKPOINT_NS,
    LANGGRAPH_STEP,
)

__all__ = [
    "EV_APPROVAL_DECIDED", "EV_APPROVAL_REQUESTED", "EV_CONTEXT_HANDOFF", "EV_RATE_LIMITED",
    "HANDOFF_FROM", "HANDOFF_TO", "KIND_GRAPH", "KIND_HANDOFF", "KIND_SUPERSTEP",
    "LANGGRAPH_CHECKPOINT_NS", "LANGGRAPH_STEP", "Scrubbed",
]  # fmt: skip

_MAX_DEPTH = 40


class Scrubbed:
    """Counts the secrets replaced while values are made JSON-safe."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def text(self, value: str) -> str:
        out, n = scrub(value)
        self.count += n
        return out


def jsonable(value: Any, scrubbed: Scrubbed | None = None, _depth: int = 0) -> Any:
    """A JSON-safe copy of ``value``: LangChain messages, pydantic models, dataclasses, Interrupts ...

    Every string is scrubbed of secrets (when ``scrubbed`` is given, its count grows). Anything
    unknown becomes its ``repr`` (scrubbed too); cycles and very deep values stop at a marker.
    """
    s = scrubbed or Scrubbed()
    if _depth > _MAX_DEPTH:
        return "[too deep]"
    d = _depth + 1
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return s.text(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, s, d) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [jsonable(v, s, d) for v in items]
    if isinstance(value, bytes | bytearray):
        return {"bytes_b64": base64.b64encode(bytes(value[:4096])).decode("ascii"), "bytes": len(value)}
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | Path):
        return str(value)
    if isinstance(value, enum.Enum):
        return jsonable(value.value, s, d)
    dump = getattr(value, "model_dump", None)  # pydantic v2: LangChain messages, SDK models
    if callable(dump):
        try:
            return jsonable(dump(), s, d)
        except Exception:  # noqa: BLE001 - fall back to repr
            pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        except Exception:  # noqa: BLE001
            fields = None
        if fields is not None:
            return {"_type": type(value).__name__, **jsonable(fields, s, d)}
    slots = _slot_values(value)
    if slots is not None:
        return {"_type": type(value).__name__, **jsonable(slots, s, d)}
    return s.text(repr(value))


def _slot_values(value: Any) -> dict[str, Any] | None:
    """Plain objects with ``__dict__`` or ``__slots__`` (e.g. LangGraph's Interrupt, Send)."""
    attrs: dict[str, Any] = {}
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if not name.startswith("_") and hasattr(value, name):
                attrs[name] = getattr(value, name)
    if not attrs and hasattr(value, "__dict__") and type(value).__module__.split(".")[0] in (
            "langgraph", "langchain_core", "agents"):
        attrs = {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return attrs or None


def dumps(value: Any) -> str:
    """Compact canonical JSON of an already JSON-safe value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
