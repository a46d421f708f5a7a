"""A local stand-in for the OpenAI and Anthropic HTTP APIs (127.0.0.1 only, fixed answers).

It lets the tests drive the *real* ``openai`` and ``anthropic`` SDKs (and the official OpenAI
instrumentation wrapping them) end to end: real request building, real response parsing into the
SDKs' pydantic types, real ``Stream`` objects over server-sent events, real ``RateLimitError``.

Routes: ``POST /v1/chat/completions`` and ``POST /v1/messages``, each with ``"stream": true``
support. The model name ``"rate-limited"`` answers 429 with ``retry-after: 7``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_USAGE = {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49,
                "prompt_tokens_details": {"cached_tokens": 32}}
ANTHROPIC_USAGE = {"input_tokens": 11, "output_tokens": 6, "cache_read_input_tokens": 100,
                   "cache_creation_input_tokens": 20}


def _chat_completion(model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake-1", "object": "chat.completion", "created": 1_700_000_000,
        "model": f"{model}-2024-08-06",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello from the fake."}}],
        "usage": OPENAI_USAGE,
    }


def _chat_chunks(model: str) -> Iterator[dict[str, Any]]:
    base = {"id": "chatcmpl-fake-2", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": f"{model}-2024-08-06"}
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]}
    yield {**base, "choices": [{"index": 0, "delta": {"content": "lo"}}]}
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    yield {**base, "choices": [], "usage": OPENAI_USAGE}


def _message(model: str) -> dict[str, Any]:
    return {
        "id": "msg_fake_1", "type": "message", "role": "assistant", "model": f"{model}-20250514",
        "content": [{"type": "text", "text": "Hello from the fake."}],
        "stop_reason": "end_turn", "stop_sequence": None, "usage": ANTHROPIC_USAGE,
    }


def _message_events(model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    start = {**_message(model), "id": "msg_fake_2", "content": [], "stop_reason": None,
             "usage": {**ANTHROPIC_USAGE, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    yield "content_block_start", {"type": "content_block_start", "index": 0,
                                  "content_block": {"type": "text", "text": ""}}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                  "delta": {"type": "text_delta", "text": "Hello"}}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                               "stop_sequence": None},
                            "usage": {"output_tokens": 6}}
    yield "message_stop", {"type": "message_stop"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    def _json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def _sse(self, events: Iterator[tuple[str | None, str]]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for name, data in events:
            if name:
                self.wfile.write(f"event: {name}\n".encode())
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        self.server.requests.append((self.path, body))  # type: ignore[attr-defined]
        model = str(body.get("model", "unknown"))
        if model == "rate-limited":
            self._json(429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}},
                       {"retry-after": "7"})
            return
        if self.path.endswith("/chat/completions"):
            if body.get("stream"):
                self._sse((None, json.dumps(c)) for c in [*_chat_chunks(model)])
                return
            self._json(200, _chat_completion(model))
        elif self.path.endswith("/messages"):
            if body.get("stream"):
                self._sse((n, json.dumps(d)) for n, d in _message_events(model))
                return
            self._json(200, _message(model))
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})


class FakeLLMServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict[str, Any]]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def fake_llm_server() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
