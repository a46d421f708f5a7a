"""A small agent harness instrumented with agenttrail, run as a subprocess by the stack tests.

It sends real telemetry through the agenttrail API (OTLP/HTTP) to the collector under test, in two
phases with a flush after each, and writes what the SDK recorded (read from an in-memory metric
reader attached next to the OTLP exporter) to a JSON file, so the tests can compare Prometheus'
answers with the exact numbers the agent recorded:

    python tests/stack/agent_workload.py --endpoint http://127.0.0.1:PORT --workspace DIR --out FILE

Each phase runs the same three runs (``s_<phase>_build``, ``s_<phase>_review``, ``s_<phase>_retry``,
the last one failing): gpt-4o and claude-sonnet-4 chats with fixed token counts, a rate-limited call,
tool calls of which some fail. Content capture is on (SPAN_AND_EVENT) so the content attributes travel
too and the redaction step has something to remove. Phase B adds one run of agent ``auditor`` whose
series have no phase-A sample.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics.export import (
    Gauge,
    Histogram,
    InMemoryMetricReader,
    Sum,
)
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agenttrail as at

SERVICE_NAME = "agent-runner"


class RateLimitError(Exception):
    """Looks like an OpenAI/Anthropic 429 to agenttrail (status_code 429)."""

    status_code = 429


class ToolFailed(Exception):
    pass


def usage(model: str, prompt: int, completion: int) -> dict[str, Any]:
    return {
        "model": model,
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        "choices": [{"message": {"role": "assistant", "content": f"answer from {model}"}}],
    }


@at.llm(provider="openai", model="gpt-4o", messages_arg="prompt")
def ask_gpt(prompt: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    time.sleep(0.012)  # spread durations over histogram buckets; tests compute from what was recorded
    return usage("gpt-4o-2024-08-06", prompt_tokens, completion_tokens)


@at.llm(provider="anthropic", model="claude-sonnet-4", messages_arg="prompt")
def ask_claude(prompt: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    time.sleep(0.045)
    return usage("claude-sonnet-4-20250514", prompt_tokens, completion_tokens)


@at.llm(provider="openai", model="gpt-4o")
def ask_gpt_rate_limited(prompt: str) -> dict[str, Any]:
    raise RateLimitError("429 Too Many Requests")


@at.tool()
def run_command(cmd: str) -> str:
    return f"ran {cmd}"


@at.tool()
def read_file(path: str) -> str:
    time.sleep(0.025)
    if path.endswith(".missing"):
        raise ToolFailed(f"no such file: {path}")
    return f"contents of {path}"


def snapshot(reader: InMemoryMetricReader) -> list[dict[str, Any]]:
    """What the SDK has recorded so far (cumulative), one entry per metric stream."""
    data = reader.get_metrics_data()
    out: list[dict[str, Any]] = []
    if data is None:
        return out
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                for p in m.data.data_points:
                    e: dict[str, Any] = {
                        "name": m.name,
                        "unit": m.unit,
                        "attributes": dict(p.attributes or {}),
                    }
                    if isinstance(m.data, Histogram):
                        e.update(
                            kind="histogram",
                            count=p.count,
                            sum=p.sum,
                            bounds=list(p.explicit_bounds),
                            buckets=list(p.bucket_counts),
                        )
                    elif isinstance(m.data, Sum):
                        e.update(kind="counter" if m.data.is_monotonic else "updown", value=p.value)
                    elif isinstance(m.data, Gauge):
                        e.update(kind="gauge", value=p.value)
                    out.append(e)
    return out


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def spans_recorded(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    return [
        {
            "trace_id": format(sp.context.trace_id, "032x"),
            "span_id": format(sp.context.span_id, "016x"),
            "name": sp.name,
            "kind": sp.kind.name,
            "status": sp.status.status_code.name,
            "attributes": {k: _plain(v) for k, v in (sp.attributes or {}).items()},
            "resource": dict(sp.resource.attributes),
        }
        for sp in exporter.get_finished_spans()
    ]


def logs_recorded(exporter: InMemoryLogRecordExporter) -> list[dict[str, Any]]:
    out = []
    for rec in exporter.get_finished_logs():
        lr = rec.log_record
        out.append(
            {
                "trace_id": format(lr.trace_id or 0, "032x"),
                "span_id": format(lr.span_id or 0, "016x"),
                "event_name": getattr(lr, "event_name", None),
                "body": lr.body,
                "attributes": {k: _plain(v) for k, v in (lr.attributes or {}).items()},
                "resource": dict(rec.resource.attributes),
            }
        )
    return out


def workload(tag: str, ws: Path) -> None:
    """Three runs; both phases run the same workload so every metric series exists after phase A
    (Prometheus can only compute an increase between two samples of a series)."""
    with at.run(f"s_{tag}_build", agent_name="builder", workspace=ws, budget={"tokens": 10000}):
        ask_gpt("plan the change", 1200, 300)
        run_command("pytest -q")
        ask_gpt("write the patch", 2500, 800)
        read_file("src/app.py")
        with contextlib.suppress(ToolFailed):
            read_file("src/app.missing")
        ask_claude("review the patch", 900, 150)
        with contextlib.suppress(RateLimitError):
            ask_gpt_rate_limited("retry too fast")
    with at.run(f"s_{tag}_review", agent_name="reviewer", workspace=ws, budget={"tokens": 5000}):
        ask_claude("summarise the diff", 700, 90)
        run_command("git diff --stat")
    try:
        with at.run(f"s_{tag}_retry", agent_name="builder", workspace=ws):
            ask_gpt("try again", 400, 50)
            read_file("build.missing")
    except ToolFailed:
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--workspace", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)

    reader = InMemoryMetricReader()
    span_exporter = InMemorySpanExporter()
    log_exporter = InMemoryLogRecordExporter()
    handle = at.configure(
        service_name=SERVICE_NAME,
        endpoint=args.endpoint,
        protocol="http/protobuf",
        capture_content="SPAN_AND_EVENT",
        metric_readers=(reader,),
        span_processors=(SimpleSpanProcessor(span_exporter),),
        log_processors=(SimpleLogRecordProcessor(log_exporter),),
    )
    result: dict[str, Any] = {"service_name": SERVICE_NAME}
    workload("a", args.workspace)
    result["flush_a"] = handle.flush(10000)
    result["A"] = snapshot(reader)
    workload("b", args.workspace)
    # A series that only exists in phase B, like the metrics of a short-lived agent process that
    # exported once: range totals must count it in full.
    with at.run("s_b_audit", agent_name="auditor", workspace=args.workspace):
        ask_gpt("audit the change", 600, 40)
        run_command("git log -1")
    result["flush_b"] = handle.flush(10000)
    result["B"] = snapshot(reader)
    result["spans"] = spans_recorded(span_exporter)
    result["logs"] = logs_recorded(log_exporter)
    handle.shutdown()
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")
    return 0 if result["flush_a"] and result["flush_b"] else 1


if __name__ == "__main__":
    sys.exit(main())
