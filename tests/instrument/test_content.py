"""Content capture modes, secret scrubbing and truncation."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import agenttrail as at
from agenttrail._secrets import scrub
from agenttrail.instrument._content import MAX_ATTRIBUTE_CHARS, CaptureMode, parse_capture_mode, safe_content
from tests.conftest import Telemetry

OPENAI_KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


@at.llm(provider="openai", model="gpt-4o", messages_arg="messages")
def chat(messages: list) -> dict:
    return {"id": "c1", "model": "gpt-4o-2024-08-06",
            "choices": [{"finish_reason": "stop", "message": {"role": "assistant",
                                                              "content": f"use key {OPENAI_KEY}"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3}}


@at.tool
def fetch(url: str) -> str:
    return f"fetched {url}"


MSGS = [{"role": "user", "content": "hello"}]
CONTENT_ATTRS = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                 "gen_ai.tool.call.result"}


def _run_both(tmp_path: Path, run_id: str) -> None:
    with at.run(run_id, agent_name="a", workspace=tmp_path):
        chat(MSGS)
        fetch("https://user:hunter2@example.com/x")


def _logs(telemetry: Telemetry, name: str) -> list:
    return [lr.log_record for lr in telemetry.logs.get_finished_logs() if lr.log_record.event_name == name]


def test_no_content_by_default(telemetry: Telemetry, tmp_path: Path) -> None:
    _run_both(tmp_path, "n1")
    for span in telemetry.finished():
        assert not CONTENT_ATTRS & set(span.attributes), span.name
    assert _logs(telemetry, "gen_ai.client.inference.operation.details") == []
    started = _logs(telemetry, "tool.started")[0]
    assert "arguments" not in json.loads(started.body)


def test_span_only(telemetry: Telemetry, capture, tmp_path: Path) -> None:
    capture("SPAN_ONLY")
    _run_both(tmp_path, "s1")
    chat_span = telemetry.span("chat gpt-4o").attributes
    assert json.loads(chat_span["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hello"}]}]
    assert json.loads(chat_span["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "use key [REDACTED:openai_key]"}]}]
    tool_span = telemetry.span("execute_tool fetch").attributes
    assert tool_span["gen_ai.tool.call.arguments"] == (
        '{"url":"https://user:[REDACTED:url_password]@example.com/x"}')
    assert tool_span["gen_ai.tool.call.result"] == "fetched https://user:[REDACTED:url_password]@example.com/x"
    assert _logs(telemetry, "gen_ai.client.inference.operation.details") == []
    assert "arguments" not in json.loads(_logs(telemetry, "tool.started")[0].body)


def test_event_only_puts_content_in_log_events_not_spans(telemetry: Telemetry, capture, tmp_path: Path) -> None:
    capture("EVENT_ONLY")
    _run_both(tmp_path, "v1")
    for span in telemetry.finished():
        assert not CONTENT_ATTRS & set(span.attributes), span.name
    (details,) = _logs(telemetry, "gen_ai.client.inference.operation.details")
    chat_span = telemetry.span("chat gpt-4o")
    assert details.span_id == chat_span.context.span_id
    assert dict(details.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
        "agenttrail.run.id": "v1", "gen_ai.conversation.id": "v1",
        "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 3,
        "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.response.id": "c1",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.input.messages": '[{"parts":[{"content":"hello","type":"text"}],"role":"user"}]',
        "gen_ai.output.messages": ('[{"parts":[{"content":"use key [REDACTED:openai_key]","type":"text"}],'
                                   '"role":"assistant"}]'),
    }
    started = json.loads(_logs(telemetry, "tool.started")[0].body)
    assert started["arguments"] == '{"url":"https://user:[REDACTED:url_password]@example.com/x"}'


def test_span_and_event(telemetry: Telemetry, capture, tmp_path: Path) -> None:
    capture("span_and_event")  # case-insensitive like util-genai
    _run_both(tmp_path, "sa1")
    assert "gen_ai.input.messages" in telemetry.span("chat gpt-4o").attributes
    assert len(_logs(telemetry, "gen_ai.client.inference.operation.details")) == 1


@pytest.mark.parametrize("value", ["true", "yes", "SPAN"])
def test_invalid_mode_warns_and_captures_nothing(value: str, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    with caplog.at_level(logging.WARNING, logger="agenttrail"):
        assert parse_capture_mode(None) is CaptureMode.NO_CONTENT
    assert [r.getMessage() for r in caplog.records] == [
        f"agenttrail: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT={value!r} is not one of "
        "NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT; capturing no content"]
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "event_only")
    assert parse_capture_mode(None) is CaptureMode.EVENT_ONLY


SECRETS = [
    ("anthropic_key", "key=sk-ant-api03-" + "x" * 30, "key=[REDACTED:anthropic_key]"),
    ("openai_key", f"OPENAI_API_KEY={OPENAI_KEY}", "OPENAI_API_KEY=[REDACTED:openai_key]"),
    ("openai_key", "sk-" + "a" * 48, "[REDACTED:openai_key]"),
    ("google_key", "AIza" + "B" * 35, "[REDACTED:google_key]"),
    ("github_token", "token ghp_" + "c" * 36, "token [REDACTED:github_token]"),
    ("slack_token", "xoxb-1234567890-abcdef", "[REDACTED:slack_token]"),
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE", "[REDACTED:aws_access_key]"),
    ("aws_secret_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key = [REDACTED:aws_secret_key]"),
    ("bearer_token", "Authorization: Bearer abc.def-ghi_jkl~mno", "Authorization: Bearer [REDACTED:bearer_token]"),
    ("url_password", "postgres://app:s3cr3t@db:5432/x", "postgres://app:[REDACTED:url_password]@db:5432/x"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
     "[REDACTED:private_key]"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "[REDACTED:jwt]"),
]


@pytest.mark.parametrize(("kind", "text", "expected"), SECRETS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRETS)])
def test_secrets_are_scrubbed(kind: str, text: str, expected: str) -> None:
    assert scrub(text) == (expected, 1)


def test_plain_text_is_untouched_and_values_truncated() -> None:
    text = "npm ERR! code ERESOLVE while resolving react@18 for a task-skeleton"
    assert scrub(text) == (text, 0)
    long = "x" * (MAX_ATTRIBUTE_CHARS + 10)
    assert safe_content(long) == "x" * MAX_ATTRIBUTE_CHARS + "…[truncated 10 chars]"


def test_secrets_in_exception_messages_never_reach_spans(telemetry: Telemetry, tmp_path: Path) -> None:
    @at.tool
    def call_api() -> None:
        raise PermissionError(f"401 for key {OPENAI_KEY}")

    with pytest.raises(PermissionError) as info, at.run("k1", agent_name="a", workspace=tmp_path) as r:
        call_api()
    assert OPENAI_KEY in str(info.value)  # the user's exception is untouched
    span = telemetry.span("execute_tool call_api")
    assert span.status.description == "401 for key [REDACTED:openai_key]"
    finished = [json.loads(x) for x in (r.spool_dir / "events.jsonl").read_text().splitlines()]
    assert OPENAI_KEY not in json.dumps(finished)
    assert OPENAI_KEY not in json.dumps([lr.log_record.body for lr in telemetry.logs.get_finished_logs()])
