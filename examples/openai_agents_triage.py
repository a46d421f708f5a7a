"""A support-triage agent on the OpenAI Agents SDK, observed with agenttrail — offline.

A triage agent hands a billing complaint off to a billing agent, which looks the invoice up and
refunds it. The SDK is real (Runner, handoffs, function tools, its tracing); the model is a local
stand-in for the OpenAI Chat Completions API (``FakeOpenAI``: an http.server on 127.0.0.1 answering
from a script), so nothing leaves the machine.

    python examples/openai_agents_triage.py                       # rate-limit scenario (fails)
    python examples/openai_agents_triage.py --scenario ok         # the same conversation, no 429s

In the ``rate-limit`` scenario the endpoint answers 429 (``retry-after-ms``) twice on the first
billing call — the OpenAI client retries and gets through — and three times on the next, when the
client's two retries run out and the run fails with ``RateLimitError``. Every 429 is a
``rate_limited`` event in the debug bundle left in ``<workspace>/_debug``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

import agenttrail as at
from agenttrail.integrations.openai_agents import AgenttrailTracingProcessor, instrument_openai_client

MODEL = "gpt-4o-mini"
INVOICE = "INV-1001"

# Rate-limit plans: for the n-th model call (1-based), how many 429s come before it succeeds.
PLANS: dict[str, dict[int, int]] = {"ok": {}, "rate-limit": {2: 2, 3: 3}}


class FakeOpenAI:
    """A local stand-in for the OpenAI Chat Completions endpoint, answering from a script.

    Decides from the request alone (the tools offered, the tool calls already made) the way the
    real model would be expected to: triage hands off, billing looks up, then refunds, then answers.
    ``plan`` makes chosen calls answer 429 first.
    """

    def __init__(self, plan: Mapping[int, int]) -> None:
        self.plan = dict(plan)
        self.calls = 0  # model calls answered with 200
        self.rejected = 0  # 429s sent
        self._pending_429: dict[int, int] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                status, payload, headers = fake.answer(self.path, body)
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

        return Handler

    def answer(self, path: str, body: Mapping[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        if not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}, {}
        with self._lock:
            n = self.calls + 1
            left = self._pending_429.setdefault(n, self.plan.get(n, 0))
            if left > 0:
                self._pending_429[n] = left - 1
                self.rejected += 1
                return 429, {"error": {"message": "Rate limit reached for gpt-4o-mini (requests per min)",
                                       "type": "requests", "code": "rate_limit_exceeded"}}, {
                    "retry-after-ms": "20", "x-ratelimit-remaining-requests": "0"}
            self.calls = n
        return 200, self._completion(n, body), {}

    def _completion(self, n: int, body: Mapping[str, Any]) -> dict[str, Any]:
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        called = [tc["function"]["name"] for m in body.get("messages", []) if m.get("role") == "assistant"
                  for tc in m.get("tool_calls") or []]
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if "transfer_to_billing_agent" in tools:
            message["tool_calls"] = [_tool_call(n, "transfer_to_billing_agent", {})]
        elif "lookup_invoice" not in called:
            message["tool_calls"] = [_tool_call(n, "lookup_invoice", {"invoice_id": INVOICE})]
        elif "refund_invoice" not in called:
            message["tool_calls"] = [_tool_call(n, "refund_invoice", {"invoice_id": INVOICE, "amount": 42.0})]
        else:
            message["content"] = f"I refunded the duplicate charge of $42.00 on {INVOICE}."
        prompt_tokens = 300 + 40 * len(body.get("messages", []))
        completion_tokens = 25 if message["content"] is None else 18
        return {
            "id": f"chatcmpl-fake-{n:03d}", "object": "chat.completion", "created": 1_780_000_000 + n,
            "model": f"{MODEL}-2024-07-18",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message["content"] is None else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def _tool_call(n: int, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": f"call_{n:03d}_{name}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}


# -- the agents -------------------------------------------------------------------------------------
REFUNDS: list[dict[str, Any]] = []


@function_tool
def lookup_invoice(invoice_id: str) -> str:
    """Look an invoice up in the billing system."""
    return json.dumps({"invoice_id": invoice_id, "amount": 42.0, "charged": 2, "status": "paid"})


@function_tool
def refund_invoice(invoice_id: str, amount: float) -> str:
    """Refund part of an invoice (a side effect: money moves)."""
    REFUNDS.append({"invoice_id": invoice_id, "amount": amount})
    return json.dumps({"refund_id": f"re_{len(REFUNDS):04d}", "status": "succeeded"})


def build_agents(client: AsyncOpenAI) -> Agent[Any]:
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    billing = Agent(name="billing_agent", model=model, tools=[lookup_invoice, refund_invoice],
                    instructions="You resolve billing problems: look the invoice up, refund duplicates.",
                    handoff_description="Billing questions: invoices, charges, refunds.")
    return Agent(name="triage_agent", model=model, handoffs=[billing],
                 instructions="Route the customer to the right specialist.")


@contextmanager
def tracing_to_agenttrail() -> Iterator[AgenttrailTracingProcessor]:
    """Send the SDK's traces to agenttrail only (not to the OpenAI backend: we are offline)."""
    processor = AgenttrailTracingProcessor(side_effect_tools={"refund_invoice"},
                                           idempotency_key=lambda tool, args: f"{tool}:{args.get('invoice_id')}")
    set_trace_processors([processor])
    try:
        yield processor
    finally:
        processor.shutdown()


async def run_scenario(workspace: Path, scenario: str = "rate-limit",
                       run_id: str | None = None) -> tuple[at.Run, str | None]:
    """Run the triage conversation; returns the finished run and the agent's final answer."""
    if workspace.exists():
        shutil.rmtree(workspace)
    workspace.mkdir(parents=True)
    REFUNDS.clear()
    answer: str | None = None
    with FakeOpenAI(PLANS[scenario]) as fake, tracing_to_agenttrail():
        client = instrument_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-local-fake-key",
                                                      max_retries=2))
        triage = build_agents(client)
        async with at.run(run_id or f"triage-{scenario}", agent_name="support-triage", workspace=workspace,
                          budget={"tokens": 50_000}) as r:
            try:
                result = await Runner.run(triage, f"I was charged twice for {INVOICE}, please fix it.",
                                          run_config=RunConfig(workflow_name="billing_triage",
                                                               group_id=f"ticket-{scenario}"))
                answer = str(result.final_output)
            except Exception as exc:  # noqa: BLE001 - the harness records why the run failed
                r.fail(f"{type(exc).__name__}: {exc}", type="rate_limited"
                       if "RateLimit" in type(exc).__name__ else type(exc).__name__)
        await client.close()
    return r, answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="build/triage-workspace", type=Path)
    parser.add_argument("--scenario", choices=sorted(PLANS), default="rate-limit")
    args = parser.parse_args(argv)
    handle = at.configure(service_name="support-triage", capture_content="SPAN_AND_EVENT")
    run, answer = asyncio.run(run_scenario(args.workspace.resolve(), args.scenario))
    handle.flush()
    handle.shutdown()
    print(f"run {run.run_id}: {run.status}" + (f" — {run.failure['message']}" if run.failure else ""))
    if answer:
        print(f"agent: {answer}")
    bundle = run.bundle_path
    if bundle is None:
        print("the run succeeded and left no bundle (run with --scenario rate-limit to see one)")
        return 0
    print(f"bundle: {bundle}")
    print(f"  analyze: agenttrail analyze {bundle}")
    print(f"  report:  agenttrail report {bundle} -o report.html")
    print(f"  explore: agenttrail tui {bundle}")
    return 1 if run.status == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())
