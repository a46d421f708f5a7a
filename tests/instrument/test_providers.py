"""@llm with the real OpenAI and Anthropic SDKs against a local fake HTTP endpoint.

Real SDK types (ChatCompletion, Stream, AsyncStream, Message, RateLimitError) parsed by the real
packages; the endpoint is a stand-in (tests/instrument/fake_llm_server.py) because no provider is
reachable here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest
from opentelemetry.trace import SpanKind, StatusCode

import agenttrail as at
from tests.conftest import Telemetry
from tests.instrument.fake_llm_server import FakeLLMServer, fake_llm_server

MSGS = [{"role": "user", "content": "Say hello"}]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as srv:
        yield srv


def _oa(server: FakeLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url + "/v1", api_key="sk-test", max_retries=0)


def _events(run: at.Run) -> list[dict]:
    return [json.loads(x) for x in (run.spool_dir / "events.jsonl").read_text().splitlines()]


def _usage_points(telemetry: Telemetry) -> list[tuple[str, int]]:
    return sorted((p.attributes["gen_ai.token.type"], p.sum)
                  for p in telemetry.metric_points("gen_ai.client.token.usage"))


OPENAI_SPAN = {
    "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o", "agenttrail.span.kind": "llm",
    "gen_ai.conversation.id": "p1", "agenttrail.run.id": "p1",
    "gen_ai.usage.input_tokens": 42, "gen_ai.usage.output_tokens": 7,
    "gen_ai.usage.cache_read.input_tokens": 32, "gen_ai.response.model": "gpt-4o-2024-08-06",
    "gen_ai.response.id": "chatcmpl-fake-1", "gen_ai.response.finish_reasons": ("stop",),
}


def test_openai_chat_completion_object(telemetry: Telemetry, server: FakeLLMServer, tmp_path: Path) -> None:
    client = _oa(server)

    @at.llm(provider="openai", model="gpt-4o")
    def ask(messages: list) -> openai.types.chat.ChatCompletion:
        return client.chat.completions.create(model="gpt-4o", messages=messages)

    with at.run("p1", agent_name="a", workspace=tmp_path) as r:
        resp = ask(MSGS)
    assert isinstance(resp, openai.types.chat.ChatCompletion)
    span = telemetry.span("chat gpt-4o")
    assert span.kind is SpanKind.CLIENT
    assert dict(span.attributes) == OPENAI_SPAN
    assert _usage_points(telemetry) == [("input", 42), ("output", 7)]
    call = next(e for e in _events(r) if e["type"] == "model.call")["data"]
    assert {k: call[k] for k in ("provider", "model", "input_tokens", "output_tokens",
                                 "cache_read_tokens", "finish_reason")} == {
        "provider": "openai", "model": "gpt-4o-2024-08-06", "input_tokens": 42, "output_tokens": 7,
        "cache_read_tokens": 32, "finish_reason": "stop"}


def test_openai_returned_stream_keeps_span_open_until_consumed(
        telemetry: Telemetry, server: FakeLLMServer, tmp_path: Path) -> None:
    client = _oa(server)

    @at.llm(provider="openai", model="gpt-4o")
    def ask_stream(messages: list) -> openai.Stream:
        return client.chat.completions.create(model="gpt-4o", messages=messages, stream=True,
                                              stream_options={"include_usage": True})

    with at.run("p2", agent_name="a", workspace=tmp_path):
        stream = ask_stream(MSGS)
        assert telemetry.finished() == []  # nothing ended yet: the stream is not consumed
        assert isinstance(stream.response.status_code, int)  # attributes reach the real Stream
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "Hello"
    a = telemetry.span("chat gpt-4o").attributes
    assert a["gen_ai.request.stream"] is True
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (42, 7)
    assert a["gen_ai.response.id"] == "chatcmpl-fake-2"
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert a["gen_ai.response.time_to_first_chunk"] > 0
    ttfc = telemetry.metric_points("gen_ai.client.operation.time_to_first_chunk")
    assert [p.count for p in ttfc] == [1]
    assert _usage_points(telemetry) == [("input", 42), ("output", 7)]


def test_openai_async_stream_and_context_manager_close(
        telemetry: Telemetry, server: FakeLLMServer, tmp_path: Path) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-test", max_retries=0)

    @at.llm(provider="openai", model="gpt-4o")
    async def ask(messages: list) -> openai.AsyncStream:
        return await client.chat.completions.create(model="gpt-4o", messages=messages, stream=True)

    async def main() -> tuple[int, str]:
        async with at.run("p3", agent_name="a", workspace=tmp_path):
            n = 0
            async for _ in await ask(MSGS):
                n += 1
            async with await ask(MSGS) as early:  # closed after one chunk: span ends, no error
                first = await early.__anext__()
            return n, first.choices[0].delta.content

    n, first = asyncio.run(main())
    assert (n, first) == (4, "Hel")
    spans = [s for s in telemetry.finished() if s.name == "chat gpt-4o"]
    assert len(spans) == 2
    assert [s.status.status_code for s in spans] == [StatusCode.UNSET, StatusCode.UNSET]
    assert spans[0].attributes["gen_ai.usage.output_tokens"] == 7
    assert "gen_ai.usage.output_tokens" not in spans[1].attributes  # usage comes in the last chunk


def test_anthropic_message_and_stream(telemetry: Telemetry, server: FakeLLMServer, tmp_path: Path) -> None:
    # the SDK's own tracing off: @llm reads the usage from the real Message / stream events
    client = anthropic.Anthropic(base_url=server.base_url, api_key="sk-ant-test", max_retries=0,
                                 open_telemetry=False)

    @at.llm(provider="anthropic", model="claude-sonnet-4")
    def ask(messages: list, stream: bool = False) -> anthropic.types.Message:
        return client.messages.create(model="claude-sonnet-4", max_tokens=64, messages=messages,
                                      stream=stream)

    with at.run("p4", agent_name="a", workspace=tmp_path):
        msg = ask(MSGS)
        events = [e.type for e in ask(MSGS, stream=True)]
    assert isinstance(msg, anthropic.types.Message)
    assert events[0] == "message_start" and events[-1] == "message_stop"
    first, second = (s for s in telemetry.finished() if s.name == "chat claude-sonnet-4")
    for span, rid in ((first, "msg_fake_1"), (second, "msg_fake_2")):
        a = span.attributes
        assert a["gen_ai.usage.input_tokens"] == 131  # 11 + 100 cache read + 20 cache write
        assert a["gen_ai.usage.cache_read.input_tokens"] == 100
        assert a["gen_ai.usage.cache_write.input_tokens"] == 20
        assert a["gen_ai.usage.output_tokens"] == 6
        assert a["gen_ai.response.model"] == "claude-sonnet-4-20250514"
        assert a["gen_ai.response.id"] == rid
        assert a["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert "gen_ai.request.stream" not in first.attributes
    assert second.attributes["gen_ai.request.stream"] is True
    assert _usage_points(telemetry) == [("input", 262), ("output", 12)]


def test_anthropic_sdk_native_tracing_owns_span_usage_we_keep_metrics(
        telemetry: Telemetry, server: FakeLLMServer, tmp_path: Path) -> None:
    """anthropic>=2 traces its own calls (scope com.anthropic.sdk.python, spans only, no metrics):
    our span points to it instead of repeating the usage; the token metric is recorded once, by us."""
    client = anthropic.Anthropic(base_url=server.base_url, api_key="sk-ant-test", max_retries=0)

    @at.llm(provider="anthropic", model="claude-sonnet-4")
    def ask(messages: list, stream: bool = False) -> anthropic.types.Message:
        return client.messages.create(model="claude-sonnet-4", max_tokens=64, messages=messages,
                                      stream=stream)

    with at.run("p7", agent_name="a", workspace=tmp_path) as r:
        ask(MSGS)
        list(ask(MSGS, stream=True))
    ours = [s for s in telemetry.finished() if s.name == "chat claude-sonnet-4"]
    sdk = [s for s in telemetry.finished() if s.name == "anthropic.messages.create"]
    assert len(ours) == len(sdk) == 2
    for mine, theirs in zip(ours, sdk, strict=True):
        assert theirs.parent.span_id == mine.context.span_id
        assert theirs.attributes["gen_ai.usage.input_tokens"] == 131
        assert theirs.attributes["gen_ai.conversation.id"] == "p7"
        assert mine.attributes["agenttrail.llm.delegated_to"] == "com.anthropic.sdk.python"
        assert not any(k.startswith("gen_ai.usage.") for k in mine.attributes)
    assert _usage_points(telemetry) == [("input", 262), ("output", 12)]
    assert r.tokens_used == 2 * (131 + 6)


def test_real_openai_rate_limit_error(telemetry: Telemetry, server: FakeLLMServer, tmp_path: Path) -> None:
    client = _oa(server)

    @at.llm(provider="openai", model="rate-limited")
    def ask(messages: list) -> openai.types.chat.ChatCompletion:
        return client.chat.completions.create(model="rate-limited", messages=messages)

    with at.run("p5", agent_name="a", workspace=tmp_path) as r:
        with pytest.raises(openai.RateLimitError) as info:
            ask(MSGS)
        assert info.traceback[-1].path != Path(at.llm.__code__.co_filename)  # raised by the SDK
        with pytest.raises(openai.RateLimitError):
            ask(MSGS)  # the retry
    span = next(s for s in telemetry.finished() if s.name == "chat rate-limited")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "openai.RateLimitError"
    assert [(p.value, dict(p.attributes)) for p in telemetry.metric_points("agenttrail.rate_limits")] == [
        (2, {"gen_ai.provider.name": "openai"})]
    assert [(p.value, dict(p.attributes)) for p in telemetry.metric_points("agenttrail.retries")] == [
        (1, {"gen_ai.agent.name": "a", "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"})]
    durations = telemetry.metric_points("gen_ai.client.operation.duration")
    assert [dict(p.attributes)["error.type"] for p in durations] == ["openai.RateLimitError"]
    limited = [e["data"] for e in _events(r) if e["type"] == "rate_limited"]
    assert limited == [{"endpoint": "openai", "retry_after_s": 7.0}] * 2
    exc_events = [lr.log_record for lr in telemetry.logs.get_finished_logs()
                  if lr.log_record.event_name == "gen_ai.client.operation.exception"]
    assert len(exc_events) == 2
    attrs = exc_events[0].attributes
    assert exc_events[0].severity_text == "WARN"
    assert attrs["exception.type"] == "openai.RateLimitError"
    assert attrs["exception.message"].startswith("Error code: 429")
    assert "Traceback" in attrs["exception.stacktrace"]
    assert exc_events[0].span_id == span.context.span_id
    assert (attrs["agenttrail.run.id"], attrs["gen_ai.conversation.id"]) == (r.run_id, r.run_id)


def test_official_openai_instrumentation_is_suppressed_into_our_span(
        telemetry: Telemetry, server: FakeLLMServer, tmp_path: Path) -> None:
    """opentelemetry-instrumentation-genai-openai (util-genai) inside @llm: one span, tokens once."""
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument()
    try:
        client = _oa(server)

        @at.llm(provider="openai", model="gpt-4o")
        def ask(messages: list) -> openai.types.chat.ChatCompletion:
            return client.chat.completions.create(model="gpt-4o", messages=messages, max_tokens=50,
                                                  temperature=0.5)

        with at.run("p1", agent_name="a", workspace=tmp_path):
            ask(MSGS)
            # without @llm the official instrumentation records on its own, stamped with the run
            client.chat.completions.create(model="gpt-4o-mini", messages=MSGS)
    finally:
        instrumentor.uninstrument()
    ours = telemetry.span("chat gpt-4o")
    theirs = telemetry.span("chat gpt-4o-mini")
    assert ours.instrumentation_scope.name == "agenttrail"
    assert theirs.instrumentation_scope.name == "opentelemetry.instrumentation.genai.openai"
    assert dict(ours.attributes) == {
        **OPENAI_SPAN, "agenttrail.llm.enriched_by": "opentelemetry-util-genai",
        "server.address": "127.0.0.1", "server.port": server.server_address[1],
        "gen_ai.request.max_tokens": 50, "gen_ai.request.temperature": 0.5}
    assert theirs.attributes["gen_ai.conversation.id"] == "p1"
    assert theirs.parent.span_id == telemetry.span("invoke_agent a").context.span_id
    # each inference counted exactly once: ours (gpt-4o) by agenttrail, theirs by the instrumentation
    usage = telemetry.metric_points("gen_ai.client.token.usage")
    by_model = sorted((p.attributes["gen_ai.request.model"], p.attributes["gen_ai.token.type"], p.sum,
                       p.count) for p in usage)
    assert by_model == [("gpt-4o", "input", 42, 1), ("gpt-4o", "output", 7, 1),
                        ("gpt-4o-mini", "input", 42, 1), ("gpt-4o-mini", "output", 7, 1)]


def test_non_util_genai_child_span_with_tokens_is_delegated(telemetry: Telemetry, tmp_path: Path) -> None:
    """Fallback for instrumentations that do not honour util-genai's inference context (OpenLLMetry,
    openai-v2): a child span from another scope carrying token usage owns the counts. The child here
    is a hand-made span standing in for such an instrumentation."""
    from opentelemetry import trace

    other = trace.get_tracer("opentelemetry.instrumentation.openai.v1")

    @at.llm(provider="openai", model="gpt-4o")
    def ask() -> dict:
        with other.start_as_current_span("openai.chat") as child:
            child.set_attribute("gen_ai.usage.input_tokens", 42)
        return {"usage": {"prompt_tokens": 42, "completion_tokens": 7}}

    with at.run("p6", agent_name="a", workspace=tmp_path) as r:
        ask()
    ours = telemetry.span("chat gpt-4o")
    assert ours.attributes["agenttrail.llm.delegated_to"] == "opentelemetry.instrumentation.openai.v1"
    assert "gen_ai.usage.input_tokens" not in ours.attributes
    assert telemetry.metric_points("gen_ai.client.token.usage") == []
    assert r.tokens_used == 49  # the run's budget still counts them


def test_usage_kept_outside_declared_fields_is_read(telemetry: Telemetry, tmp_path: Path) -> None:
    """Response types that keep ``usage`` outside their declared fields: a pydantic extra (as LiteLLM's
    ModelResponse sets it) and a property. Reading ``__dict__`` first must not hide them."""
    from pydantic import BaseModel, ConfigDict

    class ExtraResponse(BaseModel):
        model_config = ConfigDict(extra="allow")
        id: str = "resp-1"
        model: str = "gpt-4o-mini"

    class PropertyResponse:
        model = "claude-sonnet-4-5"

        @property
        def usage(self) -> dict[str, int]:
            return {"input_tokens": 120, "output_tokens": 9}

    @at.llm(provider="openai", model="gpt-4o-mini")
    def extra() -> ExtraResponse:
        return ExtraResponse(usage={"prompt_tokens": 31, "completion_tokens": 4})  # type: ignore[call-arg]

    @at.llm(provider="anthropic", model="claude-sonnet-4-5")
    def prop() -> PropertyResponse:
        return PropertyResponse()

    with at.run("p-extra", agent_name="a", workspace=tmp_path):
        extra()
        prop()
    got = {s.name: (s.attributes["gen_ai.usage.input_tokens"], s.attributes["gen_ai.usage.output_tokens"])
           for s in telemetry.finished() if s.name.startswith("chat ")}
    assert got == {"chat gpt-4o-mini": (31, 4), "chat claude-sonnet-4-5": (120, 9)}
