"""Generate a large, realistic debug bundle for the analyzer benchmark.

``python bench/gen_bundle.py OUT_DIR --spans 1000000`` writes a bundle shaped like the ones the flight
recorder seals: ``trace.jsonl`` with one OTLP ``ExportTraceServiceRequest`` per line (resource, scope and
one span, as the spool writes them), ``events.jsonl`` with two events per span, and a manifest with
sha256 hashes. The run is a coding agent: each step is a node span with a chat span and a tool span
below it; after 40% of the steps ``npm install`` fails with ERESOLVE and the agent loops over a
three-command cycle until the end, so the retry_loop detector has a known answer:
iterations = (steps - trigger_step - 1) // 3.

Deterministic: the same arguments write the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

RUN_ID = "s_bench"
T0_NS = 1_790_000_000_000_000_000  # 2026-09-21T14:13:20Z
STEP_NS = 2_000_000_000
RESOURCE = ('{"attributes":[{"key":"service.name","value":{"stringValue":"agent-runner"}},'
            '{"key":"telemetry.sdk.language","value":{"stringValue":"python"}}]}')
SCOPE = '{"name":"agenttrail","version":"0.1.0"}'
WARMUP = ["read_file", "write_file", "run_command"]
LOOP = ["npm cache clean --force", "rm -rf node_modules package-lock.json", "npm install"]


def _attr(key: str, value: str | int) -> str:
    if isinstance(value, int):
        return f'{{"key":"{key}","value":{{"intValue":"{value}"}}}}'
    return f'{{"key":"{key}","value":{{"stringValue":{json.dumps(value)}}}}}'


def _span(trace_id: str, span_id: str, parent: str | None, name: str, kind: int, start: int, end: int,
          attrs: list[str], status: int = 0, message: str = "") -> str:
    parent_part = f'"parentSpanId":"{parent}",' if parent else ""
    status_part = (f'{{"code":{status},"message":{json.dumps(message)}}}' if status else "{}")
    span = (f'{{"traceId":"{trace_id}","spanId":"{span_id}",{parent_part}"name":"{name}","kind":{kind},'
            f'"startTimeUnixNano":"{start}","endTimeUnixNano":"{end}",'
            f'"attributes":[{",".join(attrs)}],"status":{status_part}}}')
    return (f'{{"resourceSpans":[{{"resource":{RESOURCE},"scopeSpans":[{{"scope":{SCOPE},'
            f'"spans":[{span}]}}]}}]}}\n')


def _ts(ns: int) -> str:
    from datetime import UTC, datetime

    secs, frac = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(secs, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac // 1000:06d}Z"


def _hash(cmd: str) -> str:
    return hashlib.sha256(json.dumps({"cmd": cmd}, sort_keys=True).encode()).hexdigest()[:16]


def generate(out: Path, spans: int) -> dict[str, int]:
    """Write the bundle; returns what was written (spans, events, steps, trigger_step)."""
    out.mkdir(parents=True, exist_ok=True)
    steps = max((spans - 1) // 3, 4)
    trigger_step = int(steps * 0.4)
    trace_id = hashlib.md5(f"{RUN_ID}-{spans}".encode()).hexdigest()
    root = "a0" + "0" * 14
    n_spans = n_events = 0
    seq = 0
    with open(out / "trace.jsonl", "w", encoding="utf-8") as tr, \
            open(out / "events.jsonl", "w", encoding="utf-8") as ev:
        def event(ns: int, type_: str, span_id: str, data: dict[str, object]) -> None:
            nonlocal seq, n_events
            seq += 1
            n_events += 1
            ev.write(f'{{"seq":{seq},"ts":"{_ts(ns)}","run_id":"{RUN_ID}","type":"{type_}",'
                     f'"actor":"harness","trace_id":"{trace_id}","span_id":"{span_id}",'
                     f'"data":{json.dumps(data, separators=(",", ":"))}}}\n')

        event(T0_NS, "run.started", root, {"agent_name": "web-builder",
                                           "budget": {"tokens": 2_000_000_000, "tool_calls": steps * 2}})
        for step in range(steps):
            base = T0_NS + step * STEP_NS
            node_id, chat_id, tool_id = (f"{step * 4 + i:016x}" for i in (1, 2, 3))
            if step < trigger_step:
                tool = WARMUP[step % 3]
                cmd = f"{tool} src/file_{step}.ts"
                failed = False
            else:
                cmd = LOOP[(step - trigger_step + 2) % 3]
                tool = "run_command"
                failed = cmd == "npm install"
            in_tok, out_tok = 1500 + (step % 500) * 7, 80 + step % 50
            chat_end = base + 600_000_000
            tool_start, tool_end = chat_end + 1_000_000, chat_end + 900_000_000
            tr.write(_span(trace_id, node_id, root, "node act", 1, base, tool_end + 1_000_000,
                           [_attr("agenttrail.span.kind", "node"), _attr("agenttrail.node.name", "act"),
                            _attr("agenttrail.run.id", RUN_ID)]))
            tr.write(_span(trace_id, chat_id, node_id, "chat gpt-4o", 3, base + 1_000_000, chat_end, [
                _attr("gen_ai.operation.name", "chat"), _attr("gen_ai.provider.name", "openai"),
                _attr("gen_ai.request.model", "gpt-4o"), _attr("gen_ai.response.model", "gpt-4o-2024-08-06"),
                _attr("gen_ai.conversation.id", RUN_ID), _attr("agenttrail.run.id", RUN_ID),
                _attr("gen_ai.usage.input_tokens", in_tok), _attr("gen_ai.usage.output_tokens", out_tok),
                _attr("gen_ai.usage.cache_read.input_tokens", 1024)]))
            h = _hash(cmd)
            tr.write(_span(trace_id, tool_id, node_id, f"execute_tool {tool}", 1, tool_start, tool_end, [
                _attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", tool),
                _attr("gen_ai.tool.call.id", f"call_{step}"), _attr("agenttrail.tool.input_hash", h),
                _attr("gen_ai.tool.call.arguments", json.dumps({"cmd": cmd}, separators=(",", ":"))),
                _attr("agenttrail.run.id", RUN_ID)]
                + ([_attr("error.type", "ToolError")] if failed else []),
                status=2 if failed else 0, message="npm ERR! code ERESOLVE" if failed else ""))
            n_spans += 3
            event(base, "node.started", node_id, {"node": "act"})
            event(chat_end, "model.call", chat_id, {"provider": "openai", "model": "gpt-4o-2024-08-06",
                                                    "input_tokens": in_tok, "output_tokens": out_tok,
                                                    "cache_read_tokens": 1024, "duration_ms": 599.0})
            event(tool_start, "tool.started", tool_id, {"tool": tool, "call_id": f"call_{step}",
                                                        "input_hash": h})
            event(tool_end, "tool.finished", tool_id, {
                "tool": tool, "call_id": f"call_{step}", "status": "error" if failed else "ok",
                "error": "npm ERR! code ERESOLVE" if failed else None, "latency_ms": 899.0})
            event(tool_end + 1_000_000, "node.finished", node_id, {"node": "act"})
            event(tool_end + 2_000_000, "checkpoint.saved", node_id, {"checkpoint_id": f"ck{step}",
                                                                      "step": step})
        end = T0_NS + steps * STEP_NS
        tr.write(_span(trace_id, root, None, "invoke_agent web-builder", 1, T0_NS - 1_000_000, end, [
            _attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "web-builder"),
            _attr("agenttrail.span.kind", "run"), _attr("agenttrail.run.id", RUN_ID)],
            status=2, message="iteration cap reached"))
        n_spans += 1
        event(end, "run.finished", root, {"status": "failed", "reason": "iteration cap reached"})
    files = {}
    for name in ("events.jsonl", "trace.jsonl"):
        p = out / name
        h = hashlib.sha256()
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
        files[name] = {"bytes": p.stat().st_size, "sha256": h.hexdigest()}
    manifest = {"format": "agenttrail.bundle", "version": 1, "run_id": RUN_ID, "status": "failed",
                "started_at": _ts(T0_NS), "ended_at": _ts(end), "agent_name": "web-builder",
                "failure": {"type": "iteration_cap", "message": "iteration cap reached"},
                "budget": {"tokens": 2_000_000_000, "tool_calls": steps * 2},
                "producer": {"name": "agenttrail-bench", "version": "0"}, "files": files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return {"spans": n_spans, "events": n_events, "steps": steps, "trigger_step": trigger_step}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--spans", type=int, default=1_000_000)
    args = p.parse_args()
    print(json.dumps(generate(args.out, args.spans)))


if __name__ == "__main__":
    main()
