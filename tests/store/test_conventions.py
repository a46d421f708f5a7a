"""Trace-only bundles from other instrumentations (reference §7) load into the same tables and fire the
same detectors with the same numbers as our own conventions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agenttrail.detect import run_detectors
from agenttrail.store import open_store
from tests.detect.builder import BundleBuilder

LOOP = ["npm install", "npm cache clean --force", "rm -rf node_modules", "npm install",
        "npm cache clean --force", "rm -rf node_modules", "npm install", "npm cache clean --force",
        "rm -rf node_modules", "npm install"]
ERR = "npm ERR! code ERESOLVE"


def official(b: BundleBuilder, t: float, cmd: str, failed: bool) -> None:
    b.span(t, t + 1, "chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                     "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 1000,
                                     "gen_ai.usage.output_tokens": 50, "gen_ai.conversation.id": "sess-9"},
           kind=3)
    b.span(t + 1, t + 2, "execute_tool run_command", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "run_command",
        "gen_ai.tool.call.arguments": json.dumps({"cmd": cmd}),
        **({"error.type": "ToolError"} if failed else {})}, status=2 if failed else 0,
        message=ERR if failed else "")


def openllmetry(b: BundleBuilder, t: float, cmd: str, failed: bool) -> None:
    b.span(t, t + 1, "openai.chat", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                     "gen_ai.response.model": "gpt-4o", "gen_ai.usage.input_tokens": 1000,
                                     "gen_ai.usage.output_tokens": 50, "llm.request.type": "chat",
                                     "traceloop.association.properties.session_id": "sess-9"}, kind=3)
    b.span(t + 1, t + 2, "run_command.tool", {
        "traceloop.span.kind": "tool", "traceloop.entity.name": "run_command",
        "gen_ai.tool.name": "run_command",
        "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"cmd": cmd}}),
        "traceloop.association.properties.session_id": "sess-9"},
        status=2 if failed else 0, message=ERR if failed else "")


def openinference(b: BundleBuilder, t: float, cmd: str, failed: bool) -> None:
    b.span(t, t + 1, "ChatCompletion", {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
                                        "llm.token_count.prompt": 1000, "llm.token_count.completion": 50,
                                        "llm.provider": "openai", "session.id": "sess-9"})
    b.span(t + 1, t + 2, "run_command", {"openinference.span.kind": "TOOL", "tool.name": "run_command",
                                         "input.value": json.dumps({"cmd": cmd}), "session.id": "sess-9"},
           status=2 if failed else 1, message=f"ToolError: {ERR}" if failed else "")


def legacy(b: BundleBuilder, t: float, cmd: str, failed: bool) -> None:
    b.span(t, t + 1, "chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                                     "gen_ai.request.model": "gpt-4o", "gen_ai.usage.prompt_tokens": 1000,
                                     "gen_ai.usage.completion_tokens": 50, "gen_ai.conversation.id": "sess-9"},
           kind=3)
    b.span(t + 1, t + 2, "execute_tool run_command", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "run_command",
        "gen_ai.tool.call.arguments": json.dumps({"cmd": cmd})},
        status=2 if failed else 0, message=ERR if failed else "")


@pytest.mark.parametrize("shape", [official, openllmetry, openinference, legacy],
                         ids=["official", "openllmetry", "openinference", "legacy"])
def test_trace_only_bundle_fires_retry_loop(tmp_path: Path,
                                            shape: Callable[[BundleBuilder, float, str, bool], None]) -> None:
    b = BundleBuilder(tmp_path, "trace-only", manifest=False)
    for i, cmd in enumerate(LOOP):
        shape(b, i * 3.0, cmd, cmd == "npm install")
    store = open_store([b.write()])
    runs = store.rows("SELECT run_id FROM runs")
    calls = store.rows("SELECT tool, status, count(*) AS n FROM tool_calls GROUP BY ALL ORDER BY ALL")
    llm = store.rows("SELECT model, sum(input_tokens) AS i, sum(output_tokens) AS o, round(sum(cost_usd), 6) AS usd "
                     "FROM llm_calls GROUP BY ALL")
    result = run_detectors(store, ["retry_loop"])
    store.close()
    assert runs == [{"run_id": "sess-9"}]
    assert calls == [{"tool": "run_command", "status": "error", "n": 4},
                     {"tool": "run_command", "status": "ok", "n": 6}]
    assert llm == [{"model": "gpt-4o", "i": 10_000, "o": 500, "usd": 0.03}]
    (f,) = [x.as_dict() for x in result.findings]
    assert (f["run_id"], f["iterations"], f["period"]) == ("sess-9", 3, 3)
    assert f["commands"] == ["npm cache clean --force", "rm -rf node_modules", "npm install"]
    assert f["trigger"]["command"] == "npm install"
    assert ERR in f["trigger"]["error"]
    # 9 of the 10 LLM calls start after the trigger ended: 9 × 1050 of 10 × 1050 tokens
    assert (f["tokens"], f["tokens_total"], f["token_share"]) == (9450, 10500, 0.9)


def test_tool_calls_csv_only_bundle(tmp_path: Path) -> None:
    d = tmp_path / "csv"
    d.mkdir()
    rows = ["ts,tool,input_hash,latency_ms,status,error"]
    for i, cmd in enumerate(LOOP):
        rows.append(f"2026-05-26T10:00:{i * 3:02d}Z,run_command,{hash(cmd) & 0xffff:x},900,"
                    f"{'error' if cmd == 'npm install' else 'ok'},{ERR if cmd == 'npm install' else ''}")
    (d / "tool_calls.csv").write_text("\n".join(rows) + "\n")
    (d / "manifest.json").write_text(json.dumps({"run_id": "csv-run", "status": "failed"}))
    (d / "events.jsonl").write_text(json.dumps({"seq": 1, "ts": "2026-05-26T10:00:00Z", "run_id": "csv-run",
                                                "type": "run.started", "data": {}}) + "\n")
    store = open_store([d])
    result = run_detectors(store, ["retry_loop"])
    sources: list[Any] = store.sql("SELECT DISTINCT source FROM tool_calls")
    store.close()
    assert sources == [("csv",)]
    (f,) = [x.as_dict() for x in result.findings]
    assert (f["iterations"], f["trigger"]["error"]) == (3, ERR)


@pytest.mark.parametrize("shape", [official, openllmetry, openinference, legacy],
                         ids=["official", "openllmetry", "openinference", "legacy"])
def test_trace_only_bundle_fires_stuck_loop_slow_tool_and_budget(
        tmp_path: Path, shape: Callable[[BundleBuilder, float, str, bool], None]) -> None:
    b = BundleBuilder(tmp_path, "trace-only", manifest=False)
    for i in range(5):
        shape(b, i * 3.0, "npm test", False)
    for span in b.spans:  # make every tool call slow: 40 s
        if "tool" in span["name"] or span["name"] == "run_command":
            span["endTimeUnixNano"] = str(int(span["startTimeUnixNano"]) + 40 * 10**9)
    store = open_store([b.write()])
    result = run_detectors(store, ["stuck_loop", "slow_tool"])
    store.close()
    got = sorted((f.code, f.run_id, f.fields.get("repeats") or f.fields.get("slow_calls")) for f in result.findings)
    assert got == [("slow_tool", "sess-9", 5), ("stuck_loop", "sess-9", 5)]
