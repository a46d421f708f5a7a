"""The recorder's fast paths write exactly what the reference code writes.

``span_json`` (the spool writer's encoder) against ``json.dumps(span_dict(span))``, the batched
``write_lines`` against line-by-line ``write`` (rotation included), and the run-identity stamp in
``on_start`` against ``Span.set_attributes`` (attribute order, limits).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

import agenttrail as at
from agenttrail.instrument import _otlp_json
from agenttrail.instrument._recorder import Spool, _attribute_dict, _RotatingLines, _stamp
from tests.conftest import Telemetry

_VALUES: dict[str, Any] = {
    "s": "plain",
    "s.quote": 'say "hi"\\ \n\t\x00\x1f',
    "s.unicode": "héllo — 日本 \U0001f600 \ud800",
    "s.empty": "",
    "i": 42,
    "i.neg": -7,
    "i.big": 2**63 - 1,
    "f": 0.1,
    "f.int": 3.0,
    "f.big": 1e300,
    "f.small": -5e-324,
    "f.nan": math.nan,
    "f.inf": math.inf,
    "f.ninf": -math.inf,
    "b.t": True,
    "b.f": False,
    "a.s": ("x", 'y"', "ü"),
    "a.i": (1, -2),
    "a.f": (1.5, math.inf),
    "a.b": (True, False),
    "a.empty": (),
}


def _spans(limits: SpanLimits | None = None) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "fast-path", "n": 3}),
                        span_limits=limits)
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = tp.get_tracer("scope.a", "1.2.3")
    other = tp.get_tracer("scope.b")
    with tracer.start_as_current_span("root ✓", kind=SpanKind.SERVER, attributes=_VALUES) as root:
        with other.start_as_current_span('child "q"', kind=SpanKind.CLIENT) as child:
            child.add_event("ev", {"k": "v", "n": 1, "t": (1, 2)})
            child.add_event("bare")
            child.set_status(Status(StatusCode.ERROR, "bad ünïcode \"x\""))
        with tracer.start_as_current_span("ok", kind=SpanKind.PRODUCER) as ok:
            ok.set_status(Status(StatusCode.OK))
        tracer.start_span("consumer", kind=SpanKind.CONSUMER).end()
        root.set_attribute("late", 1)
    tracer.start_span("no attributes").end()
    return list(exporter.get_finished_spans())


def test_span_json_is_span_dict_dumped() -> None:
    spans = _spans()
    assert len(spans) == 5
    for span in spans:
        want = json.dumps(_otlp_json.span_dict(span), separators=(",", ":"))
        got = _otlp_json.span_json(
            span.name, span.context.trace_id if span.context else None,
            span.context.span_id if span.context else None,
            span.parent.span_id if span.parent else None, span.kind, span.start_time, span.end_time,
            _attribute_dict(span), span.status, span.events)
        assert got == want


def test_attributes_json_falls_back_for_other_types() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    attrs: dict[Any, Any] = {"bytes": b"\xff\x00", "odd": Odd(), "int.sub": StatusCode.ERROR, "list": ["a", 1]}
    want = json.dumps(_otlp_json.key_values(attrs), separators=(",", ":"))
    assert _otlp_json.attributes_json(attrs) == want
    keyed: dict[Any, Any] = {1: "one", "two": 2}
    assert _otlp_json.attributes_json(keyed) == json.dumps(_otlp_json.key_values(keyed), separators=(",", ":"))


def test_spool_span_lines_match_the_reference_document(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    spans = _spans()
    for span in spans:
        spool.write_span(span)
    spool.close()
    want = []
    for span in spans:
        before, after = _otlp_json.document_prefix(span.resource, span.instrumentation_scope)
        want.append(before + json.dumps(_otlp_json.span_dict(span), separators=(",", ":")) + after)
    assert (tmp_path / "spool" / "trace.jsonl").read_text(encoding="utf-8").splitlines() == want


@pytest.mark.parametrize("max_bytes", [1, 25, 60, 10_000])
def test_write_lines_rotates_like_write(tmp_path: Path, max_bytes: int) -> None:
    lines = [f"line {i} " + "x" * (i % 7) for i in range(40)]
    one, batch = tmp_path / "one", tmp_path / "batch"
    one.mkdir()
    batch.mkdir()
    a = _RotatingLines(one / "trace.jsonl", max_bytes, 3)
    b = _RotatingLines(batch / "trace.jsonl", max_bytes, 3)
    for line in lines:
        a.write(line)
    b.write_lines(lines[:13])
    b.write_lines(lines[13:])
    a.close()
    b.close()
    files = sorted(p.name for p in one.iterdir())
    assert files == sorted(p.name for p in batch.iterdir())
    for name in files:
        assert (one / name).read_text() == (batch / name).read_text(), name
    assert a.dropped_files == b.dropped_files


def _stamped(limits: SpanLimits | None, initial: dict[str, Any], identity: dict[str, str],
             fast: bool) -> tuple[dict[str, Any], int]:
    tp = TracerProvider(span_limits=limits)
    span = tp.get_tracer("t").start_span("s", attributes=initial)
    if fast:
        assert _stamp(span, tuple(identity.items()))  # type: ignore[arg-type]
    else:
        span.set_attributes(identity)
    span.end()
    return dict(span.attributes or {}), span.dropped_attributes  # type: ignore[attr-defined]


def test_stamp_matches_set_attributes() -> None:
    identity = {"gen_ai.conversation.id": "conv", "agenttrail.run.id": "run"}
    for initial in ({}, {"a": 1, "b": "x"}, {"agenttrail.run.id": "old", "a": 1}):
        fast = _stamped(None, initial, identity, True)
        slow = _stamped(None, initial, identity, False)
        assert fast == slow
        assert list(fast[0]) == list(slow[0])  # the same order: the identity last


def test_stamp_leaves_limited_spans_to_set_attributes() -> None:
    identity = (("gen_ai.conversation.id", "conv"), ("agenttrail.run.id", "run"))
    tp = TracerProvider(span_limits=SpanLimits(max_span_attributes=3))
    span = tp.get_tracer("t").start_span("s", attributes={"a": 1, "b": 2})
    assert not _stamp(span, identity)  # type: ignore[arg-type]  # would exceed the count limit
    tp = TracerProvider(span_limits=SpanLimits(max_span_attribute_length=2))
    assert not _stamp(tp.get_tracer("t").start_span("s"), identity)  # type: ignore[arg-type]
    ended = TracerProvider().get_tracer("t").start_span("s")
    ended.end()
    assert not _stamp(ended, identity)  # type: ignore[arg-type]


def test_a_non_string_conversation_id_is_stamped_by_set_attributes(
        telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("run-int", "agent", workspace=tmp_path) as r:
        r.conversation_id = 7  # type: ignore[assignment]  # an integration's framework id
        assert r.stamp_items is None
        at.tool(lambda: None)()
    span = telemetry.span("execute_tool <lambda>")
    assert (span.attributes or {})["gen_ai.conversation.id"] == 7
    assert (span.attributes or {})["agenttrail.run.id"] == "run-int"


def test_limited_spans_in_a_run_still_carry_the_identity(telemetry: Telemetry, tmp_path: Path) -> None:
    from opentelemetry import trace

    tp = trace.get_tracer_provider()
    tracer = tp.get_tracer("limits")  # type: ignore[attr-defined]
    limits = tracer._span_limits  # type: ignore[attr-defined]
    tracer._span_limits = SpanLimits(max_span_attribute_length=3)  # type: ignore[attr-defined]
    try:
        with at.run("run-limited", "agent", workspace=tmp_path):
            tracer.start_span("limited").end()
    finally:
        tracer._span_limits = limits  # type: ignore[attr-defined]
    span = telemetry.span("limited")
    assert dict(span.attributes or {}) == {"gen_ai.conversation.id": "run", "agenttrail.run.id": "run"}


@pytest.mark.parametrize("values", [
    {"gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30, "gen_ai.response.model": "m",
     "gen_ai.response.id": "r", "gen_ai.response.finish_reasons": ("stop", "length")},
    {"f": 1.5, "b": True, "a": "moved to the end"},
    {"list": ["stop"], "i": 1},  # a list: the SDK makes it a tuple
    {"mixed": ("a", 1)},  # the SDK drops a mixed sequence
    {"bytes": b"x", "none": None},
])
def test_set_plain_attributes_matches_set_attributes(values: dict[str, Any]) -> None:
    from agenttrail.instrument._recorder import set_plain_attributes

    got = []
    for fast in (True, False):
        span = TracerProvider().get_tracer("t").start_span("s", attributes={"a": 0, "z": 1})
        if fast:
            set_plain_attributes(span, values)
        else:
            span.set_attributes(values)
        span.end()
        attrs = dict(span.attributes or {})  # type: ignore[attr-defined]
        got.append((list(attrs.items()), span.dropped_attributes))  # type: ignore[attr-defined]
    assert got[0] == got[1]


def test_set_plain_attributes_respects_limits() -> None:
    from agenttrail.instrument._recorder import set_plain_attributes

    for limits in (SpanLimits(max_span_attributes=3), SpanLimits(max_span_attribute_length=2)):
        got = []
        for fast in (True, False):
            span = TracerProvider(span_limits=limits).get_tracer("t").start_span("s", attributes={"a": 0, "b": 1})
            values = {"c": "long value", "d": "x"}
            if fast:
                set_plain_attributes(span, values)
            else:
                span.set_attributes(values)
            span.end()
            got.append((list(dict(span.attributes or {}).items()), span.dropped_attributes))  # type: ignore[attr-defined]
        assert got[0] == got[1]


def test_is_stream_answers_per_type() -> None:
    from agenttrail.instrument._stream import is_stream

    def gen() -> Any:
        yield 1

    async def agen() -> Any:
        yield 1

    a = agen()
    for _ in range(2):  # the second round reads the cached answers
        assert is_stream(gen()) and is_stream(a) and is_stream(iter([1]))
        assert not is_stream({"a": 1}) and not is_stream("s") and not is_stream([1]) and not is_stream(None)


def test_a_failing_recorder_never_reaches_the_code_that_starts_or_ends_a_span(
        telemetry: Telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The SDK calls span processors unguarded; a bug in ours is logged once, the user's code runs on."""
    from opentelemetry import trace

    from agenttrail.instrument import _recorder, _runtime

    def broken(*_: Any) -> Any:
        raise RuntimeError("recorder bug")

    monkeypatch.setattr(_recorder, "_attribute_dict", broken)
    monkeypatch.setattr(_recorder, "_stamp", broken)
    monkeypatch.setenv("AGENTTRAIL_SWALLOW_ERRORS", "1")  # internal_error re-raises under pytest otherwise
    monkeypatch.setattr(_runtime, "_reported", set())
    tracer = trace.get_tracer("user")
    with at.run("run-broken", "agent", workspace=tmp_path):
        for _ in range(3):
            with tracer.start_as_current_span("user work"):
                pass
    assert len([s for s in telemetry.finished() if s.name == "user work"]) == 3  # exported as usual
    warnings = [r.getMessage() for r in caplog.records if "internal error" in r.getMessage()]
    assert warnings == ["agenttrail: internal error while stamping a span with the run; telemetry continues",
                        "agenttrail: internal error while queueing an ended span; telemetry continues"]
