"""Small fixture bundles for detector tests: events.jsonl, trace.jsonl and a manifest, written exactly.

Times are seconds from the run's start (2026-05-26T10:00:00Z); ``BundleBuilder.at`` turns them into
RFC 3339 strings and nanoseconds. Spans follow the GenAI conventions unless a test passes its own
attributes (to shape a trace like another instrumentation's).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agenttrail.bundle.otlp import key_values

T0 = datetime(2026, 5, 26, 10, 0, 0, tzinfo=UTC)


def iso(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ns(seconds: float) -> int:
    return int(T0.timestamp() * 1e9) + round(seconds * 1e9)


def input_hash(args: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(args, sort_keys=True).encode()).hexdigest()[:16]


class BundleBuilder:
    def __init__(self, root: Path, run_id: str = "r1", *, status: str | None = "failed",
                 budget: dict[str, Any] | None = None, manifest: bool = True) -> None:
        self.dir = root / run_id
        self.run_id = run_id
        self.status = status
        self.budget = budget or {}
        self.with_manifest = manifest
        self.events: list[dict[str, Any]] = []
        self.spans: list[dict[str, Any]] = []
        self.files: dict[str, str] = {}
        self.trace_id = hashlib.md5(run_id.encode()).hexdigest()
        self._span_n = 0
        self.end = 0.0

    # -- raw pieces ---------------------------------------------------------------------------------
    def event(self, t: float, type_: str, data: dict[str, Any] | None = None, **top: Any) -> int:
        seq = top.pop("seq", len(self.events) + 1)
        ev = {"seq": seq, "ts": iso(t), "run_id": self.run_id, "type": type_, **top}
        if data is not None:
            ev["data"] = data
        self.events.append(ev)
        self.end = max(self.end, t)
        return seq

    def span(self, start: float, end: float, name: str, attrs: dict[str, Any], *, kind: int = 1,
             status: int = 0, message: str = "", parent: str | None = None) -> str:
        self._span_n += 1
        span_id = f"{self._span_n:016x}"
        s: dict[str, Any] = {
            "traceId": self.trace_id, "spanId": span_id, "name": name, "kind": kind,
            "startTimeUnixNano": str(ns(start)), "endTimeUnixNano": str(ns(end)),
            "attributes": key_values(attrs),
            "status": {"code": status, "message": message} if status else {}}
        if parent:
            s["parentSpanId"] = parent
        self.spans.append(s)
        self.end = max(self.end, end)
        return span_id

    def file(self, rel: str, text: str) -> None:
        self.files[rel] = text

    # -- the usual shapes -----------------------------------------------------------------------------
    def started(self, t: float = 0.0, **data: Any) -> int:
        return self.event(t, "run.started", {"agent_name": "agent", "budget": self.budget, **data})

    def finished(self, t: float, status: str = "failed", reason: str | None = None) -> int:
        return self.event(t, "run.finished", {"status": status, "reason": reason})

    def llm(self, t: float, duration: float = 1.0, input_tokens: int = 1000, output_tokens: int = 100,
            model: str = "gpt-4o", **extra: Any) -> str:
        return self.span(t, t + duration, f"chat {model}", {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
            "gen_ai.request.model": model, "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens, "gen_ai.conversation.id": self.run_id, **extra},
            kind=3)

    def tool(self, t: float, tool: str, args: dict[str, Any], *, duration: float = 1.0,
             error: str | None = None, result: str | None = None, side_effect: bool = False,
             idempotency_key: str | None = None, call_id: str | None = None) -> str:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
            "gen_ai.tool.call.arguments": json.dumps(args, separators=(",", ":")),
            "agenttrail.tool.input_hash": input_hash(args)}
        if call_id:
            attrs["gen_ai.tool.call.id"] = call_id
        if result is not None:
            attrs["gen_ai.tool.call.result"] = result
        if side_effect:
            attrs["agenttrail.tool.side_effect"] = True
        if idempotency_key:
            attrs["agenttrail.tool.idempotency_key"] = idempotency_key
        if error:
            attrs["error.type"] = "ToolError"
        return self.span(t, t + duration, f"execute_tool {tool}", attrs,
                         status=2 if error else 0, message=error or "")

    # -- writing -----------------------------------------------------------------------------------
    def write(self) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.events:
            (self.dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in self.events))
        if self.spans:
            doc = {"resourceSpans": [{"resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "agent"}}]},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": self.spans}]}]}
            (self.dir / "trace.jsonl").write_text(json.dumps(doc) + "\n")
        for rel, text in self.files.items():
            p = self.dir / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        if self.with_manifest:
            m: dict[str, Any] = {"format": "agenttrail.bundle", "version": 1, "run_id": self.run_id,
                                 "started_at": iso(0), "ended_at": iso(self.end),
                                 "agent_name": "agent", "budget": self.budget}
            if self.status:
                m["status"] = self.status
            (self.dir / "manifest.json").write_text(json.dumps(m, indent=2))
        return self.dir
