"""An instrumented agent whose OTLP/HTTP receiver dies, then hangs, mid-run (run by test_collector_down).

Runs in its own process because OpenTelemetry's global providers are set once per process. It:

1. starts a real OTLP/HTTP receiver on 127.0.0.1 (decodes ``ExportTraceServiceRequest``), configures
   agenttrail with it as the endpoint and runs a first batch of agent steps — the receiver gets spans;
2. stops the receiver (connection refused) and runs more steps;
3. listens on the same port and accepts the exporter's connection without ever answering (a hung
   collector; the export timeout is 10 minutes, so the export stays in flight), then runs two equal
   batches of steps while that export is pending, measuring memory with tracemalloc after each.

No clock is read for a verdict: if a step waited for the exporter it would wait for the hung
collector (minutes) and the test's subprocess timeout would fail the test; if memory grew with the
number of spans, the second batch would add megabytes. It prints one JSON document with what it saw
and exits with ``os._exit`` (the SDK's atexit flush would otherwise wait on the hung collector).
"""

from __future__ import annotations

import gc
import json
import os
import socket
import sys
import tempfile
import threading
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

os.environ["OTEL_BSP_SCHEDULE_DELAY"] = "50"
os.environ["OTEL_BLRP_SCHEDULE_DELAY"] = "50"
os.environ["OTEL_EXPORTER_OTLP_TIMEOUT"] = "600"

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import agenttrail as at

RECEIVED: dict[str, int] = {"spans": 0, "requests": 0}


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one connection per request: stopping the server stops receiving

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        RECEIVED["requests"] += 1
        if self.path == "/v1/traces":
            req = ExportTraceServiceRequest.FromString(body)
            RECEIVED["spans"] += sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()


@at.tool
def read_file(path: str) -> str:
    return f"contents of {path}"


@at.llm(provider="openai", model="gpt-4o")
def think(step: int) -> dict[str, Any]:
    return {"model": "gpt-4o-2024-08-06", "usage": {"prompt_tokens": 100 + step % 7, "completion_tokens": 20}}


@at.node("step")
def step(i: int) -> None:
    think(i)
    read_file(f"src/file_{i % 50}.py")


def run_steps(start: int, n: int) -> int:
    for i in range(start, start + n):
        step(i)
    return n


def traced_now() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def batch_queues(handle: at.TelemetryHandle) -> dict[str, int]:
    """Current length of the span and log export queues (the SDK's bounded deques)."""
    out = {}
    span_procs = handle.tracer_provider._active_span_processor._span_processors
    log_procs = handle.logger_provider._multi_log_record_processor._log_record_processors
    for kind, procs in (("spans", span_procs), ("logs", log_procs)):
        for p in procs:
            inner = getattr(p, "_batch_processor", None)
            if inner is not None:
                out[kind] = len(inner._queue)
                out[f"{kind}_max"] = inner._max_queue_size
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    handle = at.configure(service_name="collector-down-agent", endpoint=f"http://127.0.0.1:{port}",
                          protocol="http/protobuf")
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as ws, at.run("down-1", agent_name="builder", workspace=Path(ws)) as r:
        result["steps_alive"] = run_steps(0, 200)
        result["flush_alive"] = handle.flush(5000)
        result["received_alive"] = dict(RECEIVED)

        server.shutdown()  # the collector dies: connection refused
        server.server_close()
        result["steps_dead"] = run_steps(200, n)

        hung = socket.socket()  # the collector comes back hung: accepts connections, never answers
        hung.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hung.bind(("127.0.0.1", port))
        hung.listen(64)
        hung.settimeout(120)
        pending, _ = hung.accept()  # an export is now in flight, waiting for an answer that never comes
        result["export_in_flight"] = True
        tracemalloc.start()
        result["steps_hung_1"] = run_steps(200 + n, n)  # also fills every bounded queue
        first = traced_now()
        result["steps_hung_2"] = run_steps(200 + 2 * n, n)
        second = traced_now()
        result["mem_after_batch_1"] = first
        result["mem_after_batch_2"] = second
        result["queues"] = batch_queues(handle)
        pending.setblocking(False)
        try:
            result["exporter_gave_up"] = pending.recv(1) == b""  # closed by the client?
        except BlockingIOError:
            result["exporter_gave_up"] = False
    result["tool_calls"] = r.tool_calls
    result["inference_calls"] = r.inference_calls
    result["received_total"] = dict(RECEIVED)
    result["run_status"] = r.status
    print(json.dumps(result), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
