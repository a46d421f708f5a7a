"""Content capture mode, secret scrubbing, argument hashing and truncation.

Content (prompts, tool arguments, tool results) is private by default. It is captured only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (or ``configure(capture_content=...)``) says
so, and whatever is captured is scrubbed of secrets and truncated before it leaves the process.
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.util.genai.environment_variables import (
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
)

from .._secrets import REDACTED, scrub

__all__ = [
    "MAX_ATTRIBUTE_CHARS", "REDACTED", "CaptureMode", "input_hash", "parse_capture_mode", "safe_content",
    "scrub", "to_json", "truncate",
]  # fmt: skip

_log = logging.getLogger("agenttrail")

#: Attribute values longer than this many characters are cut (documented in docs/instrumenting.md).
MAX_ATTRIBUTE_CHARS: Final = 8192


class CaptureMode(enum.Enum):
    NO_CONTENT = "NO_CONTENT"
    SPAN_ONLY = "SPAN_ONLY"
    EVENT_ONLY = "EVENT_ONLY"
    SPAN_AND_EVENT = "SPAN_AND_EVENT"

    @property
    def on_spans(self) -> bool:
        return self in (CaptureMode.SPAN_ONLY, CaptureMode.SPAN_AND_EVENT)

    @property
    def on_events(self) -> bool:
        return self in (CaptureMode.EVENT_ONLY, CaptureMode.SPAN_AND_EVENT)

    @property
    def any(self) -> bool:
        return self is not CaptureMode.NO_CONTENT


def parse_capture_mode(value: str | CaptureMode | None) -> CaptureMode:
    """Parse a capture mode the way util-genai does: case-insensitive, anything else warns.

    ``None`` reads the environment variable. ``"true"`` is *not* a mode (it silently meant
    NO_CONTENT in util-genai); we warn so the user learns why nothing is captured.
    """
    if isinstance(value, CaptureMode):
        return value
    source = "capture_content"
    if value is None:
        value = os.environ.get(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, "")
        source = OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
    text = value.strip().upper()
    if not text:
        return CaptureMode.NO_CONTENT
    try:
        return CaptureMode[text]
    except KeyError:
        _log.warning(
            "agenttrail: %s=%r is not one of NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT; "
            "capturing no content",
            source,
            value,
        )
        return CaptureMode.NO_CONTENT


def truncate(text: str, limit: int = MAX_ATTRIBUTE_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"…[truncated {len(text) - limit} chars]"


# One encoder, built once: json.dumps with options builds a new one per call (~1 µs).
_ENCODER: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=repr, ensure_ascii=False)


def to_json(value: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, anything unknown as ``repr``."""
    return _ENCODER.encode(value)


def input_hash(arguments: Mapping[str, Any]) -> str:
    """The identity hash of a tool call (bundle spec): sha256 of canonical JSON, 16 hex chars."""
    return hashlib.sha256(to_json(arguments).encode("utf-8")).hexdigest()[:16]


def safe_content(value: Any) -> str:
    """Serialise, scrub and truncate content for an attribute or an event."""
    text = value if isinstance(value, str) else to_json(value)
    text, _ = scrub(text)
    return truncate(text)
