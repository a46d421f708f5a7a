"""Per-call overhead of ``@tool`` and ``@llm`` against hand-written OpenTelemetry and peers' decorators.

Every subject runs in its own subprocess (OpenTelemetry's global providers are set once per process,
and logfire installs its own), configured the same way: an SDK tracer provider with a
``BatchSpanProcessor`` whose exporter drops everything (production shape: export happens off the
calling thread), and a meter provider. Each subprocess also measures the undecorated function, so
every subject's overhead is its time minus the plain call measured in the same process. Ratios are
against the hand-written span measured in this run. All subjects are measured in turn, in 2 rounds
(``--quick``) or 3, and each keeps its best round, so the machine's drifting load hits all alike.

Subjects (``@tool`` on ``def read_file(path, limit=10)``; ``@llm`` on a function returning a real
``openai`` ChatCompletion object):

- ``manual``: hand-written OTel producing what ``@tool``/``@llm`` produce outside a run — same span
  name, kind and attributes (incl. the input hash / the usage read from the response) and the same
  duration (and token) histogram records.
- ``agenttrail``: the decorator outside a run; ``agenttrail+run``: inside ``run()``, which also
  writes the flight recorder's events to disk and emits them as log records (more work than any peer).
- ``openinference``: ``OITracer.tool`` / ``OITracer.llm`` (with a ``process_output`` reading usage).
- ``logfire``: ``logfire.instrument()`` (does not read usage: its ``@llm`` row does less work).
- OpenLLMetry (``traceloop-sdk`` 0.62.4) is not measured: it pins OpenTelemetry 1.45.1 through its
  ``opentelemetry-instrumentation-*`` dependencies (it would downgrade this project's OpenTelemetry)
  and ``Traceloop.init`` instruments every installed library, so it cannot share this environment.

``python bench/bench_instrument.py [--quick]``; writes ``build/bench/bench_instrument.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("tool", "llm")
SUBJECTS = ("manual", "agenttrail", "agenttrail+run", "openinference", "logfire")


# ---------------------------------------------------------------------------------------------
# worker side


def _providers() -> Any:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(Drop(), max_queue_size=2048))
    trace.set_tracer_provider(tp)
    metrics.set_meter_provider(MeterProvider())
    return BatchSpanProcessor(Drop(), max_queue_size=2048)


def _response() -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}})


def _subject(name: str, kind: str) -> tuple[Callable[[], Any], Callable[[], Any], Any]:
    """(plain call, decorated call, context manager to run inside) for one subject."""
    import contextlib

    resp = _response()

    def read_file(path: str, limit: int = 10) -> str:
        return path

    def chat(prompt: str) -> Any:
        return resp

    plain = read_file if kind == "tool" else chat
    arg = "src/app.py" if kind == "tool" else "hello"
    ctx: Any = contextlib.nullcontext()
    extra = _providers()

    if name == "manual":
        decorated = _manual(kind, plain)
    elif name.startswith("agenttrail"):
        import agenttrail as at

        at.configure(service_name="bench", exporters=False)
        decorated = at.tool(read_file) if kind == "tool" else at.llm("openai", "gpt-4o")(chat)
        if name == "agenttrail+run":
            ctx = at.run("bench", agent_name="bench", workspace=tempfile.mkdtemp())
    elif name == "openinference":
        from openinference.instrumentation import OITracer, TraceConfig
        from opentelemetry import trace

        tracer = OITracer(trace.get_tracer("bench"), config=TraceConfig())
        if kind == "tool":
            decorated = tracer.tool(read_file)
        else:
            def usage(output: Any) -> dict[str, Any]:
                u = output.usage
                return {"llm.token_count.prompt": u.prompt_tokens, "llm.token_count.completion": u.completion_tokens,
                        "llm.model_name": output.model}

            decorated = tracer.llm(process_output=usage)(chat)
    elif name == "logfire":
        import logfire

        logfire.configure(send_to_logfire=False, console=False, additional_span_processors=[extra],
                          service_name="bench")
        decorated = logfire.instrument()(plain)
    else:
        raise SystemExit(f"unknown subject {name}")
    return (lambda: plain(arg)), (lambda: decorated(arg)), ctx


def _manual(kind: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """What a careful engineer writes by hand for the same telemetry."""
    import hashlib
    import itertools
    import json as _json

    from opentelemetry import metrics, trace
    from opentelemetry.trace import SpanKind

    tracer = trace.get_tracer("manual")
    meter = metrics.get_meter("manual")
    ids = itertools.count(1)
    if kind == "tool":
        hist = meter.create_histogram("gen_ai.execute_tool.duration", unit="s")
        metric_attrs = {"gen_ai.tool.name": "read_file", "gen_ai.tool.type": "function"}

        def tool_wrapper(path: str, limit: int = 10) -> Any:
            args = _json.dumps({"path": path}, sort_keys=True, separators=(",", ":"))
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file",
                     "gen_ai.tool.type": "function", "gen_ai.tool.call.id": f"call_{next(ids):06d}",
                     "agenttrail.tool.input_hash": hashlib.sha256(args.encode()).hexdigest()[:16]}
            t0 = time.perf_counter()
            with tracer.start_as_current_span("execute_tool read_file", attributes=attrs):
                out = fn(path)
            hist.record(time.perf_counter() - t0, metric_attrs)
            return out

        return tool_wrapper
    duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s")
    tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")

    def llm_wrapper(prompt: str) -> Any:
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o"}
        t0 = time.perf_counter()
        with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT, attributes=attrs) as span:
            resp = fn(prompt)
            u = resp.usage
            span.set_attributes({"gen_ai.usage.input_tokens": u.prompt_tokens,
                                 "gen_ai.usage.output_tokens": u.completion_tokens,
                                 "gen_ai.response.model": resp.model, "gen_ai.response.id": resp.id,
                                 "gen_ai.response.finish_reasons": [c.finish_reason for c in resp.choices]})
        m = {**attrs, "gen_ai.response.model": resp.model}
        tokens.record(u.prompt_tokens, {**m, "gen_ai.token.type": "input"})
        tokens.record(u.completion_tokens, {**m, "gen_ai.token.type": "output"})
        duration.record(time.perf_counter() - t0, m)
        return resp

    return llm_wrapper


def _time(fn: Callable[[], Any], n: int, reps: int) -> float:
    """Best of ``reps`` runs of ``n`` calls, in µs of the calling thread's CPU time per call.

    CPU time of the calling thread (``time.thread_time``) is what a decorator costs the agent; it
    leaves out the export thread (the same exporter for every subject) and the time this shared
    2-core machine gives to other processes, which made wall-clock numbers swing 2x between runs.
    """
    best = float("inf")
    for _ in range(reps):
        # every repetition starts from the same collector state: otherwise whether a full collection
        # of the whole heap (~60 ms here, every ~10k calls: the span export queue keeps spans alive)
        # falls into a repetition decides more of its time than the subject does
        gc.collect()
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time() - t0) / n)
    return best * 1e6


def worker(name: str, kind: str, n: int, reps: int) -> dict[str, Any]:
    plain, decorated, ctx = _subject(name, kind)
    with ctx:
        _time(decorated, max(200, n // 10), 1)  # warm up (first-call costs, queue steady state)
        plain_us = _time(plain, n, reps)
        total_us = _time(decorated, n, reps)
    return {"subject": name, "kind": kind, "plain_us": plain_us, "total_us": total_us,
            "overhead_us": max(total_us - plain_us, 0.0)}


# ---------------------------------------------------------------------------------------------
# driver


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker", nargs=2, metavar=("SUBJECT", "KIND"))
    ap.add_argument("-n", type=int, default=None)
    args = ap.parse_args()
    n = args.n or (2000 if args.quick else 10000)
    reps = 3 if args.quick else 5
    rounds = 2 if args.quick else 3
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], n, reps)))
        return 0
    env = {**os.environ, "OTEL_SDK_DISABLED": "false", "LOGFIRE_IGNORE_NO_CONFIG": "1"}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    results: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
    skipped: dict[str, str] = {"openllmetry": "traceloop-sdk 0.62.4 pins OpenTelemetry 1.45.1 (see docstring)"}
    # Rounds over all subjects, best round per subject: this shared machine's load drifts over
    # seconds, and one process per subject in a row let that drift decide the ratios (±25 %).
    for _ in range(rounds):
        for kind in KINDS:
            for subject in SUBJECTS:
                if f"{subject}/{kind}" in skipped:
                    continue
                proc = subprocess.run([sys.executable, __file__, "--worker", subject, kind, "-n", str(n)],
                                      capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
                                      check=False)
                if proc.returncode != 0:
                    skipped[f"{subject}/{kind}"] = (proc.stderr.strip().splitlines() or ["failed"])[-1]
                    continue
                row = json.loads(proc.stdout.strip().splitlines()[-1])
                best = results[kind].get(subject)
                if best is None or row["overhead_us"] < best["overhead_us"]:
                    results[kind][subject] = row
    report: dict[str, Any] = {"n": n, "reps": reps, "rounds": rounds, "results": results, "skipped": skipped}
    for kind in KINDS:
        rows = results[kind]
        base = rows.get("manual", {}).get("overhead_us")
        print(f"\n@{kind}: overhead per call (µs of calling-thread CPU) = decorated - undecorated, same process;"
              f" n={n}, best of {reps} × {rounds} rounds")
        print(f"  {'subject':<16}{'plain µs':>10}{'total µs':>10}{'overhead µs':>13}{'× manual':>10}")
        for subject, row in rows.items():
            ratio = row["overhead_us"] / base if base else float("nan")
            row["ratio_vs_manual"] = ratio
            print(f"  {subject:<16}{row['plain_us']:>10.2f}{row['total_us']:>10.2f}{row['overhead_us']:>13.2f}"
                  f"{ratio:>10.2f}")
        peers = [rows[p]["overhead_us"] for p in ("openinference", "logfire") if p in rows]
        if "agenttrail" in rows and base:
            report[f"{kind}_ratio_vs_manual"] = rows["agenttrail"]["overhead_us"] / base
            report[f"{kind}_cheapest_vs_peers"] = bool(peers) and rows["agenttrail"]["overhead_us"] <= min(peers)
            print(f"  agenttrail vs hand-written: {report[f'{kind}_ratio_vs_manual']:.2f}× (target ≤ 1.2×); "
                  f"cheapest of the peers: {report[f'{kind}_cheapest_vs_peers']}")
    for key, why in skipped.items():
        print(f"  skipped {key}: {why}")
    out = ROOT / "build" / "bench" / "bench_instrument.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
