"""A deterministic bundle for the TUI tests: fixed ids, fixed times, written file by file.

The demo harness stamps wall-clock times and random ids, which no snapshot can hold still; this builder
writes manifest.json, events.jsonl and trace.jsonl directly. The run: plan → read a file → `npm install`
fails → a 3-command retry loop (`npm cache clean`, `rm -rf node_modules`, `npm install`) × ``loops``.
With ``hostile=True`` tool output and event data carry Rich markup, ANSI/OSC 8 escapes, control
characters, a bidi override and a very long line — all of which the TUI must show literally.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenttrail import names as n

T0_NS = 1_767_323_045_000_000_000  # 2026-01-02T03:04:05Z
RUN_ID = "r_fixture"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"

HOSTILE_ERROR = ("[bold red]npm ERR![/] [link=https://evil.example/x]click[/link] "
                 "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x1b\\osc8\x1b]8;;\x1b\\ "
                 "bell\x07 nul\x00 rtl\u202eevil")
LONG_LINE = "x" * 5000


def _ts(ns: int) -> str:
    secs, rem = divmod(ns, 1_000_000_000)
    from datetime import UTC, datetime

    return datetime.fromtimestamp(secs, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{rem // 1000:06d}Z"


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


@dataclass
class _Builder:
    hostile: bool
    spans: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    n_span: int = 0
    n_call: int = 0

    def span_id(self) -> str:
        self.n_span += 1
        return f"{self.n_span:016x}"

    def span(self, sid: str, parent: str | None, name: str, start: int, end: int,
             attrs: dict[str, Any], error: str | None = None) -> None:
        s: dict[str, Any] = {
            "traceId": TRACE_ID, "spanId": sid, "name": name, "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
            "attributes": [_attr(k, v) for k, v in attrs.items()],
            "status": {"code": 2, "message": error} if error else {"code": 0}}
        if parent:
            s["parentSpanId"] = parent
        self.spans.append(s)

    def event(self, ts: int, type_: str, actor: str, span: str | None, data: dict[str, Any]) -> None:
        e: dict[str, Any] = {"seq": len(self.events) + 1, "ts": _ts(ts), "run_id": RUN_ID, "type": type_,
                             "actor": actor, "trace_id": TRACE_ID, "data": data}
        if span:
            e["span_id"] = span
        self.events.append(e)

    def llm(self, parent: str, start: int, tokens_in: int, tokens_out: int) -> int:
        sid, end = self.span_id(), start + 4_000_000
        self.span(sid, parent, "chat gpt-4o", start, end, {
            n.OPERATION_NAME: "chat", n.PROVIDER_NAME: "openai", n.SPAN_KIND: "llm",
            n.REQUEST_MODEL: "gpt-4o", n.USAGE_INPUT_TOKENS: tokens_in, n.USAGE_OUTPUT_TOKENS: tokens_out,
            n.RUN_ID: RUN_ID})
        self.event(end, "model.call", "model", sid, {
            "provider": "openai", "model": "gpt-4o", "input_tokens": tokens_in, "output_tokens": tokens_out,
            "duration_ms": 4.0})
        return end

    def tool(self, parent: str, start: int, tool: str, args: dict[str, Any], ms: int,
             error: str | None = None) -> int:
        sid, end = self.span_id(), start + ms * 1_000_000
        self.n_call += 1
        call_id = f"call_{self.n_call:04d}"
        arguments = json.dumps(args, sort_keys=True)
        digest = hashlib.sha256(arguments.encode()).hexdigest()[:16]
        self.event(start, "tool.started", "tool", sid, {"tool": tool, "call_id": call_id,
                                                        "input_hash": digest})
        self.span(sid, parent, f"execute_tool {tool}", start, end, {
            n.OPERATION_NAME: "execute_tool", n.SPAN_KIND: "tool", n.TOOL_NAME: tool,
            n.TOOL_CALL_ID: call_id, n.TOOL_INPUT_HASH: digest, n.TOOL_CALL_ARGUMENTS: arguments,
            n.RUN_ID: RUN_ID, **({n.ERROR_TYPE: "ToolError"} if error else {})}, error)
        data: dict[str, Any] = {"tool": tool, "call_id": call_id, "status": "error" if error else "ok",
                                "latency_ms": float(ms)}
        if error:
            data["error"] = error
            data["exit_code"] = 1
        self.event(end, "tool.finished", "tool", sid, data)
        return end

    def node(self, parent: str, start: int, name: str, body: Any) -> int:
        sid = self.span_id()
        self.event(start, "node.started", "harness", sid, {"node": name})
        end = body(sid, start + 100_000) + 100_000
        self.span(sid, parent, name, start, end, {n.NODE_NAME: name, n.SPAN_KIND: "node", n.RUN_ID: RUN_ID})
        self.event(end, "node.finished", "harness", sid, {"node": name, "status": "ok"})
        return end


def write_bundle(path: Path, *, loops: int = 4, hostile: bool = False) -> Path:
    """Write the fixture bundle into ``path`` (created) and return it."""
    b = _Builder(hostile=hostile)
    root = b.span_id()
    error = HOSTILE_ERROR if hostile else "npm ERR! code ERESOLVE"
    b.event(T0_NS, "run.started", "harness", root, {"agent_name": "fixture-agent",
                                                     "budget": {"tokens": 200000}})
    t = T0_NS + 1_000_000
    t = b.node(root, t, "plan", lambda sid, s: b.llm(sid, s, 1200, 80))

    def act(tool: str, args: dict[str, Any], ms: int, err: str | None = None) -> Any:
        def body(sid: str, s: int) -> int:
            return b.tool(sid, b.llm(sid, s, 1500, 40) + 100_000, tool, args, ms, err)
        return body

    t = b.node(root, t, "act", act("read_file", {"path": "package.json"}, 1))
    t = b.node(root, t, "act", act("run_command", {"cmd": "npm install"}, 20, error))
    for _ in range(loops):
        t = b.node(root, t, "act", act("run_command", {"cmd": "npm cache clean --force"}, 5))
        t = b.node(root, t, "act", act("run_command", {"cmd": "rm -rf node_modules"}, 5))
        t = b.node(root, t, "act", act("run_command", {"cmd": "npm install"}, 20, error))
    if hostile:
        b.event(t, "error", "system", None, {"message": error, "long": LONG_LINE,
                                              "markup": "[link=https://evil.example]x[/link]"})
    end = t + 1_000_000
    b.event(end, "run.finished", "harness", root, {"status": "failed", "reason": "iteration_cap"})
    b.span(root, None, "invoke_agent fixture-agent", T0_NS, end, {
        n.OPERATION_NAME: "invoke_agent", n.SPAN_KIND: "run", n.AGENT_NAME: "fixture-agent",
        n.RUN_ID: RUN_ID}, "iteration cap reached")

    path.mkdir(parents=True, exist_ok=True)
    manifest = {
        "format": "agenttrail.bundle", "version": 1, "run_id": RUN_ID, "status": "failed",
        "started_at": _ts(T0_NS), "ended_at": _ts(end), "agent_name": "fixture-agent",
        "workflow_name": "build_app",
        "failure": {"type": "iteration_cap",
                    "message": "iteration cap of 30 steps reached without `npm run build` passing"},
        "producer": {"name": "agenttrail", "version": "0.1.0"}}
    (path / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    with open(path / "events.jsonl", "w", encoding="utf-8") as fh:
        for e in b.events:
            fh.write(json.dumps(e, ensure_ascii=False) + "\n")
    with open(path / "trace.jsonl", "w", encoding="utf-8") as fh:
        for s in sorted(b.spans, key=lambda s: s["spanId"]):
            doc = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "fixture")]},
                                      "scopeSpans": [{"scope": {"name": "agenttrail"}, "spans": [s]}]}]}
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return path
