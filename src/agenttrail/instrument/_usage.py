"""Read token usage and response metadata from OpenAI / Anthropic responses or plain dicts.

Works on the SDKs' pydantic objects and on their ``model_dump()`` dicts alike (attribute or key
access), on stream chunks (usage arrives in the last chunk) and on Anthropic stream events.
Semconv: ``gen_ai.usage.input_tokens`` INCLUDES cached tokens; Anthropic reports them separately,
so they are added back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import names


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` or ``obj.key``, ``None`` when absent (see ``_fields``)."""
    if obj is None:
        return None
    return _fields(obj).get(key)


class _Attributes:
    """``.get`` for an object that keeps its fields neither in a dict nor in a ``__dict__``."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def get(self, key: str) -> Any:
        return getattr(self.obj, key, None)


_NOT_PYDANTIC: Any = object()
_on_class: dict[tuple[type, str], bool] = {}


def _class_has(t: type, key: str) -> bool:
    """Whether ``key`` is defined on the class (a property, a method), answered once per class."""
    found = _on_class.get((t, key))
    if found is None:
        found = any(key in vars(c) for c in t.__mro__)
        if len(_on_class) < 4096:
            _on_class[(t, key)] = found
    return found


_pydantic_types: dict[type, bool] = {}


def _is_pydantic(t: type) -> bool:
    found = _pydantic_types.get(t)
    if found is None:
        found = any("__pydantic_extra__" in getattr(c, "__slots__", ()) for c in t.__mro__)
        if len(_pydantic_types) < 512:
            _pydantic_types[t] = found
    return found


class _DictFirst:
    """``.get`` for an object with a ``__dict__``.

    Pydantic models (the SDKs' types) and dataclasses keep their declared fields in ``__dict__``, so
    those are read from there. Anything else may still be an attribute: a pydantic extra (LiteLLM sets
    ``usage`` so), a property. For a pydantic model those are looked up directly, because ``getattr``
    of a name it does not have raises and catches inside pydantic (~1.5 µs, several per call); any
    other object is asked with ``getattr``.
    """

    __slots__ = ("d", "extra", "obj")

    def __init__(self, obj: Any, d: dict[str, Any]) -> None:
        self.obj, self.d = obj, d
        self.extra = obj.__pydantic_extra__ if _is_pydantic(type(obj)) else _NOT_PYDANTIC

    def get(self, key: str) -> Any:
        d = self.d
        if key in d:
            return d[key]
        extra = self.extra
        if extra is _NOT_PYDANTIC:
            return getattr(self.obj, key, None)
        if extra and key in extra:
            return extra[key]
        return getattr(self.obj, key, None) if _class_has(type(self.obj), key) else None


def _fields(obj: Any) -> Any:
    """Something whose ``.get(key)`` reads ``obj[key]`` or ``obj.key`` (``obj`` not None), None when
    absent: read several fields of one object without repeating the dispatch."""
    if type(obj) is dict or isinstance(obj, Mapping):
        return obj
    d = getattr(obj, "__dict__", None)
    if type(d) is dict:
        return _DictFirst(obj, d)
    return _Attributes(obj)


def _int(value: Any) -> int | None:
    if value is None or type(value) is int:
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


@dataclass(slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    response_model: str | None = None
    response_id: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    output_text: str | None = None

    def merge(self, other: Usage) -> None:
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                     "reasoning_tokens", "response_model", "response_id"):
            value = getattr(other, name)
            if value is not None:
                setattr(self, name, value)
        for reason in other.finish_reasons:
            if reason not in self.finish_reasons:
                self.finish_reasons.append(reason)
        if other.output_text:
            self.output_text = (self.output_text or "") + other.output_text

    def span_attributes(self) -> dict[str, Any]:
        """The span attributes, in this order; finish reasons as a tuple (what the SDK stores)."""
        out: dict[str, Any] = {}
        if self.input_tokens is not None:
            out[names.USAGE_INPUT_TOKENS] = self.input_tokens
        if self.output_tokens is not None:
            out[names.USAGE_OUTPUT_TOKENS] = self.output_tokens
        if self.cache_read_tokens is not None:
            out[names.USAGE_CACHE_READ_INPUT_TOKENS] = self.cache_read_tokens
        if self.cache_write_tokens is not None:
            out[names.USAGE_CACHE_WRITE_INPUT_TOKENS] = self.cache_write_tokens
        if self.reasoning_tokens is not None:
            out[names.USAGE_REASONING_OUTPUT_TOKENS] = self.reasoning_tokens
        if self.response_model is not None:
            out[names.RESPONSE_MODEL] = self.response_model
        if self.response_id is not None:
            out[names.RESPONSE_ID] = self.response_id
        if self.finish_reasons:
            out[names.RESPONSE_FINISH_REASONS] = tuple(self.finish_reasons)
        return out


def extract_response(resp: Any, with_text: bool = False, into: Usage | None = None) -> Usage:
    """Usage and response metadata of a response or stream chunk; ``with_text`` also reads the
    output text (only when content capture is on: it is content). With ``into`` (an empty Usage),
    fills it in place instead of allocating one to merge."""
    u = into if into is not None else Usage()
    if resp is None or isinstance(resp, (str, bytes, int, float)):
        return u
    f = _fields(resp)
    # Anthropic stream events wrap the message: message_start.message / message_delta.usage
    inner = f.get("message")
    if inner is not None and not isinstance(inner, str) and f.get("type") == "message_start":
        resp = inner
        f = _fields(resp)
    model = f.get("model")
    if isinstance(model, str):
        u.response_model = model
    rid = f.get("id")
    if isinstance(rid, str):
        u.response_id = rid
    usage = f.get("usage")
    if usage is not None:
        _read_usage(usage, u)
    # OpenAI chat: choices[].finish_reason; responses API: status; Anthropic: stop_reason
    choices = f.get("choices")
    if isinstance(choices, list):
        for choice in choices:
            reason = _get(choice, "finish_reason")
            if isinstance(reason, str) and reason not in u.finish_reasons:
                u.finish_reasons.append(reason)
    stop = f.get("stop_reason")
    if stop is None:
        stop = _get(f.get("delta"), "stop_reason")
    if isinstance(stop, str):
        u.finish_reasons.append(stop)
    if with_text:
        u.output_text = _output_text(resp, choices)
    return u


def _output_text(resp: Any, choices: Any) -> str | None:
    parts: list[str] = []
    if isinstance(choices, list):  # OpenAI chat: message.content, or delta.content in a chunk
        for choice in choices:
            msg = _get(choice, "message") or _get(choice, "delta")
            text = _get(msg, "content")
            if isinstance(text, str):
                parts.append(text)
    content = _get(resp, "content")  # Anthropic message: [{type: text, text}]
    if isinstance(content, list):
        for block in content:
            if _get(block, "type") == "text" and isinstance(_get(block, "text"), str):
                parts.append(_get(block, "text"))
    delta = _get(resp, "delta")  # Anthropic stream: content_block_delta
    if delta is not None and _get(delta, "type") == "text_delta" and isinstance(_get(delta, "text"), str):
        parts.append(_get(delta, "text"))
    if not parts:
        text = getattr(resp, "output_text", None)  # OpenAI responses API (a property)
        if isinstance(text, str):
            parts.append(text)
    return "".join(parts) if parts else None


def _read_usage(usage: Any, u: Usage) -> None:
    f = _fields(usage)
    prompt = _int(f.get("prompt_tokens"))
    completion = _int(f.get("completion_tokens"))
    if prompt is not None or completion is not None:  # OpenAI chat completions
        u.input_tokens = prompt
        u.output_tokens = completion
        details = f.get("prompt_tokens_details")
        if details is None:
            u.cache_read_tokens = u.cache_write_tokens = None
        else:
            d = _fields(details)
            u.cache_read_tokens = _int(d.get("cached_tokens"))
            u.cache_write_tokens = _int(d.get("cache_write_tokens"))
        u.reasoning_tokens = _int(_get(f.get("completion_tokens_details"), "reasoning_tokens"))
        return
    inp = _int(f.get("input_tokens"))
    out = _int(f.get("output_tokens"))
    cache_read = _int(f.get("cache_read_input_tokens"))
    cache_write = _int(f.get("cache_creation_input_tokens"))
    details = f.get("input_tokens_details")  # OpenAI responses API
    if details is not None:
        u.cache_read_tokens = _int(_get(details, "cached_tokens"))
        u.reasoning_tokens = _int(_get(f.get("output_tokens_details"), "reasoning_tokens"))
        u.input_tokens, u.output_tokens = inp, out
        return
    if cache_read is not None or cache_write is not None:  # Anthropic: input excludes cache
        u.input_tokens = (inp or 0) + (cache_read or 0) + (cache_write or 0)
        u.cache_read_tokens = cache_read
        u.cache_write_tokens = cache_write
    else:
        u.input_tokens = inp
    u.output_tokens = out
