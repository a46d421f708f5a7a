"""Helpers shared by the framework integrations: JSON-safe values, scrubbing, names.

The attribute and event names below are not in :mod:`agenttrail.names` yet (that module belongs to the
instrumentation layer); they are spelled once here so the integrations never hard-code them twice.
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
from typing import Any, Final

from .._secrets import scrub

# --- names the integrations add (proposed for agenttrail.names) ------------------------------
LANGGRAPH_STEP: Final = "agenttrail.langgraph.step"
LANGGRAPH_CHECKPOINT_NS: Final = "agenttrail.langgraph.checkpoint_ns"
HANDOFF_FROM: Final = "agenttrail.handoff.from_agent"
HANDOFF_TO: Final = "agenttrail.handoff.to_agent"
KIND_GRAPH: Final = "graph"
KIND_SUPERSTEP: Final = "superstep"
KIND_HANDOFF: Final = "handoff"
EV_APPROVAL_REQUESTED: Final = "approval.requested"
EV_APPROVAL_DECIDED: Final = "approval.decided"
EV_RATE_LIMITED: Final = "rate_limited"
EV_CONTEXT_HANDOFF: Final = "context.handoff"

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
