"""Small, deterministic bundles for the report tests (fixed ids and times; no wall clock).

``write_bundle(path)`` writes a failed run: a plan node, then act steps each with a chat span and a
tool span; ``npm install`` fails with ERESOLVE and the agent loops over a three-command cycle (the
retry_loop detector's known answer). ``hostile=True`` puts script tags, event-handler attributes,
``javascript:`` links, a very long line and binary junk in every place run content reaches the page.
``extra_events`` pads the event log (for the evidence-beyond-any-page test and the 100k-row test).
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from pathlib import Path
from typing import Any

from agenttrail import names as n

RUN_ID = "s_fixture"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
T0 = 1_767_323_045_000_000_000  # 2026-01-02T03:04:05Z
MS = 1_000_000
LOOP = ["npm cache clean --force", "rm -rf node_modules package-lock.json", "npm install"]
ERESOLVE = "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree"

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
JS_LINK = '<a href="javascript:window.__pwned=3">click</a>'
HOSTILE = f"{SCRIPT}{IMG}{JS_LINK}\u2028</script><!--"
JUNK = "\x00\x01\x1b[31m\ufffd\udcff"[:4] + "\x7f"  # NUL, control chars, an escape sequence
LONG = "x" * 50_000

HOSTILE_MD = f"""# Progress {SCRIPT}

- [x] step one {IMG}
- [link](javascript:window.__pwned=4) and [ok](https://example.invalid/docs)
- ![img](https://example.invalid/track.png)

<div onclick="window.__pwned=5">raw html</div>
"""

TINY_PNG_SIZE = (40, 24)


def tiny_png(width: int = TINY_PNG_SIZE[0], height: int = TINY_PNG_SIZE[1]) -> bytes:
    """A real PNG (a two-colour gradient), written without any imaging library."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"".join(bytes((x * 6 % 256, 80, (200 - y * 4) % 256)) for x in range(width))
                   for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for k, v in d.items():
        out.append({"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}})
    return out


def _ts(ns: int) -> str:
    from datetime import UTC, datetime

    s, frac = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(s, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac // 1000:06d}Z"


def _hash(cmd: str) -> str:
    return hashlib.sha256(json.dumps({"cmd": cmd}, sort_keys=True).encode()).hexdigest()[:16]


def write_bundle(out: Path, *, hostile: bool = False, loops: int = 4, extra_events: int = 0,
                 run_id: str = RUN_ID, screenshots: bool = True) -> dict[str, Any]:
    """Write the bundle; returns the ids a test needs (trigger span, trigger seq, ...)."""
    out.mkdir(parents=True, exist_ok=True)
    spans: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    csv_rows: list[str] = []
    ids = {"n": 0}

    def sid() -> str:
        ids["n"] += 1
        return hashlib.sha256(f"span-{ids['n']}".encode()).hexdigest()[:16]

    def span(name: str, parent: str | None, start: int, end: int, attrs: dict[str, Any],
             error: str | None = None) -> str:
        s = sid()
        spans.append({"traceId": TRACE_ID, "spanId": s, **({"parentSpanId": parent} if parent else {}),
                      "name": name, "kind": 1, "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                      "attributes": _attrs({n.RUN_ID: run_id, **attrs}),
                      "status": {"code": 2, "message": error} if error else {}})
        return s

    def event(ns: int, type_: str, span_id: str, data: dict[str, Any], actor: str = "harness") -> int:
        seq = len(events) + 1
        events.append({"seq": seq, "ts": _ts(ns), "run_id": run_id, "type": type_, "actor": actor,
                       "trace_id": TRACE_ID, "span_id": span_id, "data": data})
        return seq

    root = sid()
    event(T0, "run.started", root, {"agent_name": "fixture-agent", "budget": {"tokens": 40_000}})
    # padding first, so the evidence sits far down the event log
    for i in range(extra_events):
        event(T0 + i * 200, "heartbeat", root, {"i": i, "note": f"padding event {i}"})
    commands = ["cat package.json", "npm install"] + LOOP * loops
    t = T0 + 5 * MS + extra_events * 200
    info: dict[str, Any] = {"root": root, "steps": len(commands)}
    err_text = (ERESOLVE + "\n" + HOSTILE + JUNK + LONG) if hostile else ERESOLVE
    for step, cmd in enumerate(commands):
        node = span("plan" if step == 0 else "act", root, t, t + 40 * MS,
                    {n.SPAN_KIND: "node", n.NODE_NAME: "act"})
        event(t, "node.started", node, {"node": "act"})
        chat = span("chat gpt-4o", node, t + 1 * MS, t + 11 * MS, {
            n.OPERATION_NAME: n.OP_CHAT, n.PROVIDER_NAME: "openai", n.REQUEST_MODEL: "gpt-4o",
            n.RESPONSE_MODEL: "gpt-4o-2024-08-06", n.USAGE_INPUT_TOKENS: 1000 + 100 * step,
            n.USAGE_OUTPUT_TOKENS: 50})
        event(t + 11 * MS, "model.call", chat, {"provider": "openai", "model": "gpt-4o-2024-08-06",
                                                 "input_tokens": 1000 + 100 * step, "output_tokens": 50,
                                                 "duration_ms": 10.0}, actor="model")
        failed = cmd == "npm install"
        tool = "run_command"
        args = json.dumps({"cmd": cmd}, separators=(",", ":"))
        tspan = span(f"execute_tool {tool}", node, t + 12 * MS, t + 32 * MS, {
            n.OPERATION_NAME: n.OP_EXECUTE_TOOL, n.TOOL_NAME: tool, n.TOOL_CALL_ID: f"call_{step}",
            n.TOOL_INPUT_HASH: _hash(cmd), n.TOOL_CALL_ARGUMENTS: args,
            **({n.ERROR_TYPE: "ToolError"} if failed else {})}, error=err_text if failed else None)
        s1 = event(t + 12 * MS, "tool.started", tspan, {"tool": tool, "call_id": f"call_{step}",
                                                        "input_hash": _hash(cmd), "arguments": args},
                   actor="tool")
        s2 = event(t + 32 * MS, "tool.finished", tspan, {
            "tool": tool, "call_id": f"call_{step}", "status": "error" if failed else "ok",
            "error": err_text if failed else None, "exit_code": 1 if failed else 0, "latency_ms": 20.0},
            actor="tool")
        if failed and "trigger_span" not in info:
            info.update(trigger_span=tspan, trigger_seq=s1, trigger_end_seq=s2)
        info["last_tool_span"], info["last_tool_seq"] = tspan, s1
        csv_rows.append(f"{_ts(t + 12 * MS)},{tool},{_hash(cmd)},20.0,{'error' if failed else 'ok'},"
                        f"{'ERESOLVE' if failed else ''}")
        event(t + 40 * MS, "node.finished", node, {"node": "act"})
        t += 50 * MS
    t += MS
    if hostile:
        event(t, "error", root, {"type": "Hostile", "message": HOSTILE + JUNK})
        event(t, "operation.intent", root, {"operation_id": "op-1", "kind": "deploy", "target": HOSTILE})
    else:
        event(t, "operation.intent", root, {"operation_id": "op-1", "kind": "deploy", "target": "prod"})
    event(t, "approval.requested", root, {"operation_id": "op-1"}, actor="human")
    event(t + MS, "run.finished", root, {"status": "failed", "reason": "iteration cap"})
    spans.insert(0, {"traceId": TRACE_ID, "spanId": root, "name": "invoke_agent fixture-agent", "kind": 1,
                     "startTimeUnixNano": str(T0), "endTimeUnixNano": str(t + MS),
                     "attributes": _attrs({n.RUN_ID: run_id, n.SPAN_KIND: "run",
                                           n.OPERATION_NAME: n.OP_INVOKE_AGENT,
                                           n.AGENT_NAME: "fixture-agent"}),
                     "status": {"code": 2, "message": "iteration cap reached"}})
    if hostile:
        spans[1]["name"] = HOSTILE + " plan"
    doc = {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "fixture"})},
                              "scopeSpans": [{"scope": {"name": "agenttrail"}, "spans": spans}]}]}
    (out / "trace.jsonl").write_text(json.dumps(doc) + "\n", encoding="utf-8")
    (out / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    (out / "tool_calls.csv").write_text("ts,tool,input_hash,latency_ms,status,error\n"
                                        + "\n".join(csv_rows) + "\n", encoding="utf-8")
    (out / "checkpoints.jsonl").write_text("".join(json.dumps({
        "checkpoint_id": f"ckpt-{i}", "parent_checkpoint_id": f"ckpt-{i - 1}" if i else None,
        "ts": _ts(T0 + i * 100 * MS), "thread_id": run_id, "step": i,
        "values": {"messages": i * 2, "note": HOSTILE if hostile else "ok"}, "metadata": {},
        "pending_writes": []}) + "\n" for i in range(3)), encoding="utf-8")
    (out / "last_state.json").write_text(json.dumps({"messages": 4, "plan": ["install", "build"],
                                                     "note": HOSTILE if hostile else "ok"}), encoding="utf-8")
    (out / "progress").mkdir(exist_ok=True)
    (out / "progress" / "PROGRESS.md").write_text(
        HOSTILE_MD if hostile else "# Progress\n\n- [x] scaffold\n- [ ] install dependencies\n",
        encoding="utf-8")
    (out / "progress" / "notes.txt").write_bytes(
        (b"binary \x00\x01\xff\xfe junk " + HOSTILE.encode("utf-8", "surrogatepass")) if hostile
        else b"plain notes\n")
    if screenshots:
        (out / "screenshots").mkdir(exist_ok=True)
        (out / "screenshots" / "step-01.png").write_bytes(tiny_png())
        (out / "screenshots" / "fake.png").write_bytes(b"<svg onload=alert(1)>" if hostile else b"not a png")
    env = "python_version=3.11.7\nharness_commit=abc123\n" + (f"HOSTILE={HOSTILE}\n" if hostile else "")
    (out / "env.txt").write_text(env, encoding="utf-8")
    manifest = {"format": "agenttrail.bundle", "version": 1, "run_id": run_id, "status": "failed",
                "started_at": _ts(T0), "ended_at": _ts(t + MS), "agent_name": "fixture-agent",
                "workflow_name": "build_app",
                "failure": {"type": "iteration_cap",
                            "message": ("iteration cap " + HOSTILE) if hostile else "iteration cap reached"},
                "budget": {"tokens": 40_000}, "producer": {"name": "agenttrail-tests", "version": "0"}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    info["events"] = len(events)
    info["spans"] = len(spans)
    return info

