"""Exact spans, attributes, events and metrics from @tool, @llm and @node."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind, StatusCode

import agenttrail as at
from agenttrail.instrument._content import input_hash
from tests.conftest import Telemetry


def _events(run: at.Run) -> list[dict]:
    path = run.spool_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@at.tool(description="Run a shell command")
def run_command(cmd: str) -> dict:
    return {"exit_code": 0 if cmd != "npm install" else 1, "stdout": "",
            "stderr": "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve" if cmd == "npm install" else ""}


@at.tool(name="search")
async def search_async(query: str, limit: int = 3) -> list[str]:
    await asyncio.sleep(0)
    return [query] * limit


@at.tool
def listing(directory: str):
    yield from ("a.txt", "b.txt")


@at.tool
async def stream_lines(n: int):
    for i in range(n):
        yield f"line {i}"


@at.tool(side_effect=True, idempotency_key=lambda path, content: f"write:{path}")
def write_file(path: str, content: str) -> str:
    raise PermissionError(f"cannot write {path}")


def test_tool_span_success_exact_attributes(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("r1", agent_name="builder", workspace=tmp_path) as r:
        out = run_command("ls -la")
    assert out["exit_code"] == 0
    span = telemetry.span("execute_tool run_command")
    assert span.kind is SpanKind.INTERNAL
    assert span.status.status_code is StatusCode.UNSET
    attrs = dict(span.attributes or {})
    assert attrs == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "run_command",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Run a shell command",
        "gen_ai.tool.call.id": attrs["gen_ai.tool.call.id"],
        "gen_ai.agent.name": "builder",
        "gen_ai.conversation.id": "r1",
        "agenttrail.run.id": "r1",
        "agenttrail.span.kind": "tool",
        "agenttrail.tool.input_hash": input_hash({"cmd": "ls -la"}),
    }
    assert attrs["gen_ai.tool.call.id"].startswith("call_")
    # the run's root span is the parent
    root = telemetry.span("invoke_agent builder")
    assert span.parent is not None and span.parent.span_id == root.context.span_id
    types = [e["type"] for e in _events(r)]
    assert types == ["run.started", "tool.started", "tool.finished", "run.finished"]
    seqs = [e["seq"] for e in _events(r)]
    assert seqs == [1, 2, 3, 4]


def test_input_hash_is_sha256_of_sorted_json() -> None:
    import hashlib

    expected = hashlib.sha256(b'{"a":1,"b":"x"}').hexdigest()[:16]
    assert input_hash({"b": "x", "a": 1}) == expected


def test_tool_nonzero_exit_is_an_error_with_the_telling_line(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("r2", agent_name="builder", workspace=tmp_path) as r:
        run_command("npm install")
    span = telemetry.span("execute_tool run_command")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "npm ERR! code ERESOLVE"
    assert span.attributes["error.type"] == "tool_error"
    finished = next(e for e in _events(r) if e["type"] == "tool.finished")
    assert finished["data"]["status"] == "error"
    assert finished["data"]["exit_code"] == 1
    assert finished["data"]["error"] == "npm ERR! code ERESOLVE"
    points = telemetry.metric_points("agenttrail.tool.errors")
    assert [(p.value, dict(p.attributes)) for p in points] == [(1, {
        "gen_ai.tool.name": "run_command", "gen_ai.tool.type": "function",
        "gen_ai.agent.name": "builder", "error.type": "tool_error"})]


def test_tool_exception_passes_through_unmodified(telemetry: Telemetry, tmp_path: Path) -> None:
    with pytest.raises(PermissionError) as info, at.run("r3", agent_name="b", workspace=tmp_path):
        write_file("/etc/passwd", "x")
    assert str(info.value) == "cannot write /etc/passwd"
    assert info.traceback[-1].name == "write_file"  # the user's frame is where it was raised
    span = telemetry.span("execute_tool write_file")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "PermissionError"
    assert span.attributes["agenttrail.tool.side_effect"] is True
    assert span.attributes["agenttrail.tool.idempotency_key"] == "write:/etc/passwd"
    root = telemetry.span("invoke_agent b")
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == "PermissionError"
    assert root.attributes["agenttrail.run.status"] == "failed"


def test_async_generator_and_generator_tools(telemetry: Telemetry, tmp_path: Path) -> None:
    async def main() -> tuple[list[str], list[str]]:
        async with at.run("r4", agent_name="b", workspace=tmp_path):
            found = await search_async("otel", limit=2)
            lines = [x async for x in stream_lines(2)]
            return found, lines + list(listing("."))

    found, lines = asyncio.run(main())
    assert found == ["otel", "otel"]
    assert lines == ["line 0", "line 1", "a.txt", "b.txt"]
    names = sorted(s.name for s in telemetry.finished())
    assert names == ["execute_tool listing", "execute_tool search", "execute_tool stream_lines",
                     "invoke_agent b"]
    s = telemetry.span("execute_tool search")
    assert s.attributes["agenttrail.tool.input_hash"] == input_hash({"query": "otel", "limit": 2})
    assert all(x.attributes["gen_ai.conversation.id"] == "r4" for x in telemetry.finished())


def test_tool_content_off_by_default_on_when_opted_in(telemetry: Telemetry, capture, tmp_path: Path) -> None:
    with at.run("r5", agent_name="b", workspace=tmp_path):
        run_command("echo $OPENAI_API_KEY")
    assert "gen_ai.tool.call.arguments" not in telemetry.span("execute_tool run_command").attributes
    telemetry.spans.clear()
    capture("SPAN_ONLY")
    with at.run("r6", agent_name="b", workspace=tmp_path):
        run_command("curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://x")
    attrs = telemetry.span("execute_tool run_command").attributes
    assert attrs["gen_ai.tool.call.arguments"] == (
        '{"cmd":"curl -H \'Authorization: Bearer [REDACTED:bearer_token]\' https://x"}')
    assert attrs["gen_ai.tool.call.result"] == '{"exit_code":0,"stderr":"","stdout":""}'


@at.llm(provider="openai", model="gpt-4o")
def chat(prompt: str) -> dict:
    return {"id": "chatcmpl-1", "model": "gpt-4o-2024-08-06",
            "choices": [{"finish_reason": "stop", "message": {"content": "hi"}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30,
                      "prompt_tokens_details": {"cached_tokens": 64}}}


@at.llm(provider="anthropic", model="claude-sonnet-4")
def chat_anthropic(prompt: str) -> dict:
    return {"id": "msg_1", "model": "claude-sonnet-4-20250514", "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100,
                      "cache_creation_input_tokens": 20}}


@at.llm(provider="openai", model="gpt-4o")
def chat_stream(prompt: str):
    yield {"id": "c1", "model": "gpt-4o-2024-08-06", "choices": [{"delta": {"content": "a"}}]}
    yield {"id": "c1", "model": "gpt-4o-2024-08-06", "choices": [{"finish_reason": "stop"}],
           "usage": {"prompt_tokens": 7, "completion_tokens": 2}}


def test_llm_span_and_metrics_exact(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("r7", agent_name="builder", workspace=tmp_path) as r:
        chat("hello")
    span = telemetry.span("chat gpt-4o")
    assert span.kind is SpanKind.CLIENT
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o", "agenttrail.span.kind": "llm",
        "gen_ai.conversation.id": "r7", "agenttrail.run.id": "r7",
        "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30,
        "gen_ai.usage.cache_read.input_tokens": 64, "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.response.id": "chatcmpl-1", "gen_ai.response.finish_reasons": ("stop",),
    }
    usage = telemetry.metric_points("gen_ai.client.token.usage")
    assert sorted((dict(p.attributes)["gen_ai.token.type"], p.sum) for p in usage) == [
        ("input", 120), ("output", 30)]
    assert dict(usage[0].attributes) | {"gen_ai.token.type": "x"} == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.token.type": "x"}
    assert list(usage[0].explicit_bounds) == [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144,
                                              1048576, 4194304, 16777216, 67108864]
    duration = telemetry.metric_points("gen_ai.client.operation.duration")
    assert len(duration) == 1 and duration[0].count == 1
    assert list(duration[0].explicit_bounds)[:3] == [0.01, 0.02, 0.04]
    model_call = next(e for e in _events(r) if e["type"] == "model.call")["data"]
    assert model_call["input_tokens"] == 120 and model_call["output_tokens"] == 30
    assert r.tokens_used == 150


def test_anthropic_input_tokens_include_cache(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("r8", agent_name="b", workspace=tmp_path):
        chat_anthropic("x")
    a = telemetry.span("chat claude-sonnet-4").attributes
    assert a["gen_ai.usage.input_tokens"] == 130  # 10 + 100 cache read + 20 cache write
    assert a["gen_ai.usage.cache_read.input_tokens"] == 100
    assert a["gen_ai.usage.cache_write.input_tokens"] == 20
    assert a["gen_ai.response.finish_reasons"] == ("end_turn",)


def test_llm_stream_records_first_chunk_and_usage(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("r9", agent_name="b", workspace=tmp_path):
        chunks = list(chat_stream("x"))
    assert len(chunks) == 2
    a = telemetry.span("chat gpt-4o").attributes
    assert a["gen_ai.request.stream"] is True
    assert a["gen_ai.usage.input_tokens"] == 7 and a["gen_ai.usage.output_tokens"] == 2
    assert a["gen_ai.response.time_to_first_chunk"] >= 0
    assert len(telemetry.metric_points("gen_ai.client.operation.time_to_first_chunk")) == 1


@at.node("plan")
def plan_node(state: dict) -> dict:
    chat("plan")
    return {"plan": "ok"}


def test_node_nesting(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("r10", agent_name="b", workflow_name="research", workspace=tmp_path) as r:
        assert plan_node({}) == {"plan": "ok"}
    root = telemetry.span("invoke_workflow research")
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["gen_ai.workflow.name"] == "research"
    node = telemetry.span("plan")
    llm_span = telemetry.span("chat gpt-4o")
    assert node.parent.span_id == root.context.span_id
    assert llm_span.parent.span_id == node.context.span_id
    assert [e["type"] for e in _events(r)] == [
        "run.started", "node.started", "model.call", "node.finished", "run.finished"]


def test_methods_keep_wraps_and_skip_self_in_hash(telemetry: Telemetry, tmp_path: Path) -> None:
    class Agent:
        @at.tool()
        def fetch(self, url: str) -> str:
            """Fetch a URL."""
            return url

    assert Agent.fetch.__name__ == "fetch" and Agent.fetch.__doc__ == "Fetch a URL."
    with at.run("r11", agent_name="b", workspace=tmp_path):
        Agent().fetch("https://example.invalid")
    assert telemetry.span("execute_tool fetch").attributes["agenttrail.tool.input_hash"] == input_hash(
        {"url": "https://example.invalid"})


def test_decorators_work_outside_a_run(telemetry: Telemetry) -> None:
    assert run_command("ls")["exit_code"] == 0
    span = telemetry.span("execute_tool run_command")
    assert "gen_ai.conversation.id" not in span.attributes


def test_run_metrics(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("r12", agent_name="builder", workspace=tmp_path) as r:
        run_command("ls")
        chat("x")
        r.fail("cap reached", type="iteration_cap")
    runs = telemetry.metric_points("agenttrail.runs")
    assert [(p.value, dict(p.attributes)) for p in runs] == [
        (1, {"gen_ai.agent.name": "builder", "agenttrail.run.status": "failed"})]
    tool_calls = telemetry.metric_points("gen_ai.invoke_agent.tool_calls")
    assert [(p.sum, dict(p.attributes)) for p in tool_calls] == [(1, {"gen_ai.agent.name": "builder"})]
    assert r.bundle_path is not None and (r.bundle_path / "manifest.json").is_file()
    manifest = json.loads((r.bundle_path / "manifest.json").read_text())
    assert manifest["failure"] == {"type": "iteration_cap", "message": "cap reached"}
