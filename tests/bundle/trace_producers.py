"""Produce trace files with real instrumentation libraries (run as a subprocess by test_import.py).

    python tests/bundle/trace_producers.py LIBRARY OUT_DIR

LIBRARY: ``official`` (opentelemetry-instrumentation-genai-openai, on util-genai), ``openllmetry``
(opentelemetry-instrumentation-openai from OpenLLMetry), ``openinference``
(openinference-instrumentation-openai), ``logfire`` (Pydantic Logfire's ``instrument_openai``, with
nothing sent anywhere: ``send_to_logfire=False``, no console, no metrics; its finished spans reach the
same in-memory exporter through ``additional_span_processors``). Each instruments the real ``openai``
client, which talks to a local HTTP server answering like the Chat Completions API (no network: a
connection to any other address fails the run): one call succeeds with usage 12 in / 3 out, the next
gets HTTP 500. Both run inside a root span ``agent-run`` that ends with an error, like a harness whose
run failed.

The same finished spans are written in each format, as the tools that export them write them:
``otlp-lines`` (hex ids, one ExportTraceServiceRequest a line: the collector's file exporter and
agenttrail's spool), ``protojson`` (``MessageToJson`` of the OTLP protobuf: base64 ids, enum
names), ``protojson-snake`` (the same with proto field names), ``tempo`` (Tempo's
``/api/traces/<id>`` body: ``{"batches": [...]}`` in protobuf JSON), ``jaeger`` (Jaeger's query API
JSON — written by ``_jaeger_stand_in`` below, because a Jaeger server cannot run here).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SESSION = "sess-import-1"


class _ChatCompletions(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        if body["messages"][-1]["content"] == "fail":
            data, code = b'{"error":{"message":"upstream overloaded","type":"server_error"}}', 500
        else:
            data, code = json.dumps({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600,
                "model": "gpt-4o-2024-08-06",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "ok"}}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}).encode(), 200
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def produce(library: str) -> Sequence[Any]:
    from opentelemetry import context, trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    sys.addaudithook(_loopback_only)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatCompletions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    exporter = InMemorySpanExporter()
    if library == "logfire":
        return _produce_logfire(server, exporter)
    provider = TracerProvider(resource=Resource.create({"service.name": f"{library}-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    session: Any = None
    if library == "official":
        from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
        from opentelemetry.util.genai._conversation_context import with_conversation_id

        session = context.attach(with_conversation_id(SESSION))
    elif library == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # type: ignore[no-redef]
    else:
        from openinference.instrumentation import using_session
        from openinference.instrumentation.openai import OpenAIInstrumentor  # type: ignore[no-redef]

        session = using_session(SESSION)
        session.__enter__()
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    _agent_run(provider.get_tracer("demo-harness"), _client(server))
    server.shutdown()
    return exporter.get_finished_spans()


def _produce_logfire(server: ThreadingHTTPServer, exporter: Any) -> Sequence[Any]:
    """Logfire makes its own tracer provider (and sets it as the global one); the extra processor
    sees the spans it finishes, as its own exporters would. The session rides in OpenTelemetry baggage,
    which Logfire copies onto every span started inside ``set_baggage`` (its own way to tag a trace)."""
    import logfire
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    logfire.configure(send_to_logfire=False, console=False, metrics=False, inspect_arguments=False,
                      service_name="logfire-agent", additional_span_processors=[SimpleSpanProcessor(exporter)])
    client = _client(server)
    logfire.instrument_openai(client)
    with logfire.set_baggage(**{"gen_ai.conversation.id": SESSION}):
        _agent_run(trace.get_tracer("demo-harness"), client)
    server.shutdown()
    return exporter.get_finished_spans()


def _client(server: ThreadingHTTPServer) -> Any:
    import openai

    return openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1",
                         api_key="sk-proj-" + "k" * 32, max_retries=0)


def _agent_run(tracer: Any, client: Any) -> None:
    """The harness: a root span around one call that succeeds and one that gets HTTP 500."""
    import openai
    from opentelemetry.trace import Status, StatusCode

    with tracer.start_as_current_span("agent-run", record_exception=False,
                                      set_status_on_exception=False) as root:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        try:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "fail"}])
        except openai.InternalServerError as e:
            root.set_attribute("error.type", "upstream_overloaded")
            root.set_status(Status(StatusCode.ERROR, f"model call failed: {e.status_code}"))


def _loopback_only(event: str, args: tuple[Any, ...]) -> None:
    """Audit hook: nothing a producer does may open a connection off this machine."""
    if event == "socket.connect" and isinstance(args[1], tuple):
        host = str(args[1][0])
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise RuntimeError(f"{host}: a trace producer tried to reach the network")


def _protojson(spans: Sequence[Any], snake: bool = False) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return MessageToDict(encode_spans(spans), preserving_proto_field_name=snake)


def _otlp_lines(spans: Sequence[Any]) -> str:
    from agenttrail.instrument import _otlp_json

    lines = []
    for s in spans:
        before, after = _otlp_json.document_prefix(s.resource, s.instrumentation_scope)
        lines.append(before + json.dumps(_otlp_json.span_dict(s)) + after)
    return "\n".join(lines) + "\n"


def _jaeger_stand_in(spans: Sequence[Any]) -> dict[str, Any]:
    """Jaeger's JSON model, as its query service renders OpenTelemetry spans (a stand-in)."""
    kinds = {0: "internal", 1: "server", 2: "client", 3: "producer", 4: "consumer"}

    def tag(k: str, v: Any) -> dict[str, Any]:
        if isinstance(v, (list, tuple)):  # Jaeger has no arrays: the translator writes JSON text
            v = json.dumps(list(v))
        t = ("bool" if isinstance(v, bool) else "int64" if isinstance(v, int)
             else "float64" if isinstance(v, float) else "string")
        return {"key": k, "type": t, "value": v if t != "string" else str(v)}

    out = []
    for s in spans:
        tags = [tag(k, v) for k, v in (s.attributes or {}).items()]
        tags += [tag("span.kind", kinds[s.kind.value]),
                 tag("otel.scope.name", s.instrumentation_scope.name)]
        if s.status.status_code.name == "OK":
            tags.append(tag("otel.status_code", "OK"))
        if s.status.status_code.name == "ERROR":
            tags += [tag("otel.status_code", "ERROR"), tag("error", True)]
            if s.status.description:
                tags.append(tag("otel.status_description", s.status.description))
        refs = ([{"refType": "CHILD_OF", "traceID": format(s.context.trace_id, "032x"),
                  "spanID": format(s.parent.span_id, "016x")}] if s.parent else [])
        out.append({"traceID": format(s.context.trace_id, "032x"), "spanID": format(s.context.span_id, "016x"),
                    "operationName": s.name, "references": refs, "startTime": s.start_time // 1000,
                    "duration": (s.end_time - s.start_time) // 1000, "tags": tags,
                    "logs": [{"timestamp": e.timestamp // 1000,
                              "fields": [tag("event", e.name)] + [tag(k, v) for k, v in (e.attributes or {}).items()]}
                             for e in s.events], "processID": "p1", "warnings": None})
    service = spans[0].resource.attributes["service.name"]
    return {"data": [{"traceID": out[0]["traceID"], "spans": out,
                      "processes": {"p1": {"serviceName": service, "tags": []}}, "warnings": None}],
            "total": 0, "limit": 0, "offset": 0, "errors": None}


FORMATS = ("otlp-lines", "protojson", "protojson-snake", "tempo", "jaeger")


def main(library: str, out_dir: Path) -> None:
    """The same spans written in every format: ``OUT_DIR/<format>.json``."""
    spans = produce(library)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "otlp-lines.json").write_text(_otlp_lines(spans))
    (out_dir / "protojson.json").write_text(json.dumps(_protojson(spans), indent=2))
    (out_dir / "protojson-snake.json").write_text(json.dumps(_protojson(spans, snake=True)))
    (out_dir / "tempo.json").write_text(json.dumps({"batches": _protojson(spans)["resourceSpans"]}))
    (out_dir / "jaeger.json").write_text(json.dumps(_jaeger_stand_in(spans)))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
