"""Traces and logs through the shipped collector config arrive intact where Tempo and Loki would
receive them, and carry every field the Grafana links and the LogQL/TraceQL queries use.

Tempo and Loki cannot run here; a second collector built from the same manifest stands in for both
(tests/stack/sink-otelcol.yaml): it receives on the very exporters the shipped config uses
(otlp_grpc for Tempo, otlp_http to <base>/otlp/v1/logs for Loki) and writes the data unchanged to
JSON files. What Tempo/Loki then do with it (indexing, label mapping) is not proven here."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from agenttrail.grafana import promnames
from agenttrail.grafana._assets import load_queries
from agenttrail.grafana.datasources import SERVICE_NAME_ATTR, TRACE_ID_FIELD, datasources
from agenttrail.instrument import names
from tests.stack.stackkit import StackRun, attrs, read_otlp

pytestmark = pytest.mark.stack

CONTENT_ATTRS = (
    names.INPUT_MESSAGES,
    names.OUTPUT_MESSAGES,
    "gen_ai.system_instructions",
    names.TOOL_CALL_ARGUMENTS,
    names.TOOL_CALL_RESULT,
)


def sink_spans(run: StackRun) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for res, sp in read_otlp(run.sink.traces, "traces"):
        assert sp["spanId"] not in out, f"span {sp['spanId']} arrived twice"
        out[sp["spanId"]] = {
            "trace_id": sp["traceId"],
            "name": sp["name"],
            "attributes": attrs(sp.get("attributes")),
            "resource": res,
        }
    return out


def sink_logs(run: StackRun) -> list[dict[str, Any]]:
    return [
        {
            "trace_id": lr.get("traceId", ""),
            "span_id": lr.get("spanId", ""),
            "event_name": lr.get("eventName"),
            "body": lr.get("body", {}).get("stringValue"),
            "attributes": attrs(lr.get("attributes")),
            "resource": res,
        }
        for res, lr in read_otlp(run.sink.logs, "logs")
    ]


def _log_key(rec: dict[str, Any]) -> tuple[str, str, Any, Any]:
    """agenttrail run events are unique by seq within a trace; GenAI semconv events
    (gen_ai.client.inference.operation.details, ...) by name within their span."""
    return rec["trace_id"], rec["span_id"], rec["event_name"], rec["attributes"].get("agenttrail.event.seq")


def test_every_span_arrives_with_its_attributes_and_resource(stack_run: StackRun) -> None:
    got = sink_spans(stack_run)
    sent = stack_run.workload["spans"]
    assert len(sent) == 2 * 14 + 3  # 2 phases x (8 + 3 + 3 spans) + the auditor run
    assert set(got) == {s["span_id"] for s in sent}
    for s in sent:
        g = got[s["span_id"]]
        assert (g["trace_id"], g["name"]) == (s["trace_id"], s["name"])
        assert g["attributes"] == s["attributes"], s["name"]
        assert g["resource"] == s["resource"]
    ops = Counter(g["attributes"][names.OPERATION_NAME] for g in got.values())
    assert ops == {"chat": 13, "execute_tool": 11, "invoke_agent": 7}


def test_every_log_record_arrives_with_its_attributes_and_resource(stack_run: StackRun) -> None:
    got = {_log_key(r): r for r in sink_logs(stack_run)}
    sent = stack_run.workload["logs"]
    assert len(got) == len(sent) > 0
    for s in sent:
        g = got[_log_key(s)]
        assert g["attributes"] == s["attributes"]
        assert g["resource"] == s["resource"]
        assert g["span_id"] == s["span_id"]
        assert g["event_name"] == s["event_name"]
        if "agenttrail.event.type" in s["attributes"]:  # run events: event name = bundle event type
            assert s["event_name"] == s["attributes"]["agenttrail.event.type"]
        assert g["body"] == s["body"]


def test_content_attributes_pass_when_redaction_is_off(stack_run: StackRun) -> None:
    seen = {k for sp in sink_spans(stack_run).values() for k in sp["attributes"]}
    assert {names.INPUT_MESSAGES, names.TOOL_CALL_ARGUMENTS, names.TOOL_CALL_RESULT} <= seen


def test_redaction_removes_content_and_nothing_else(redacted_run: StackRun) -> None:
    got = sink_spans(redacted_run)
    sent = redacted_run.workload["spans"]
    assert set(got) == {s["span_id"] for s in sent}
    for s in sent:
        kept = {k: v for k, v in s["attributes"].items() if k not in CONTENT_ATTRS}
        assert got[s["span_id"]]["attributes"] == kept, s["name"]
    got_logs = {_log_key(r): r for r in sink_logs(redacted_run)}
    assert len(got_logs) == len(redacted_run.workload["logs"])
    for s in redacted_run.workload["logs"]:
        assert got_logs[_log_key(s)]["attributes"] == {
            k: v for k, v in s["attributes"].items() if k not in CONTENT_ATTRS
        }


# --- the fields Grafana's links and the queries rely on ---------------------------------------------
def test_traces_to_logs_link_finds_the_runs_log_records(stack_run: StackRun) -> None:
    """tracesToLogsV2: {service_name="<span's service.name>"} | trace_id = "<span's trace id>"."""
    tempo = next(d for d in datasources() if d["uid"] == "tempo")["jsonData"]["tracesToLogsV2"]
    assert tempo["tags"] == [{"key": SERVICE_NAME_ATTR, "value": promnames.label(SERVICE_NAME_ATTR)}]
    assert f"| {TRACE_ID_FIELD} = " in tempo["query"]
    spans, logs = sink_spans(stack_run), sink_logs(stack_run)
    for sp in spans.values():
        if sp["attributes"][names.OPERATION_NAME] != names.OP_INVOKE_AGENT:
            continue
        linked = [
            r
            for r in logs
            if r["trace_id"] == sp["trace_id"]
            and r["resource"][SERVICE_NAME_ATTR] == sp["resource"][SERVICE_NAME_ATTR]
        ]
        run_id = sp["attributes"][names.RUN_ID]
        assert linked, f"no log record carries the trace id of run {run_id}"
        assert {r["attributes"][names.RUN_ID] for r in linked if names.RUN_ID in r["attributes"]} == {run_id}


def test_traces_to_metrics_tag_is_on_every_llm_span(stack_run: StackRun) -> None:
    tags = next(d for d in datasources() if d["uid"] == "tempo")["jsonData"]["tracesToMetrics"]["tags"]
    assert tags == [{"key": names.REQUEST_MODEL, "value": promnames.label(names.REQUEST_MODEL)}]
    chats = [s for s in sink_spans(stack_run).values() if s["attributes"][names.OPERATION_NAME] == "chat"]
    assert chats
    assert all(s["attributes"].get(names.REQUEST_MODEL) in ("gpt-4o", "claude-sonnet-4") for s in chats)


def test_loki_derived_field_trace_id_is_on_every_log_record(stack_run: StackRun) -> None:
    loki = next(d for d in datasources() if d["uid"] == "loki")["jsonData"]["derivedFields"]
    assert [(f["matcherType"], f["matcherRegex"], f["datasourceUid"]) for f in loki] == [
        ("label", TRACE_ID_FIELD, "tempo")
    ]
    trace_ids = {s["trace_id"] for s in sink_spans(stack_run).values()}
    logs = sink_logs(stack_run)
    assert all(re.fullmatch(r"[0-9a-f]{32}", r["trace_id"]) and r["trace_id"] in trace_ids for r in logs)


def _loki_fields(query: str) -> set[str]:
    """Label / structured-metadata names a LogQL query filters or groups on."""
    fields = set(re.findall(r"[{,]\s*([a-z_][a-z0-9_]*)\s*(?:=~|!=|!~|=)", query))
    fields |= set(re.findall(r"\|\s*([a-z_][a-z0-9_]*)\s*(?:=~|!=|!~|=)", query))
    for group in re.findall(r"by\s*\(([^)]*)\)", query):
        fields |= {g.strip() for g in group.split(",") if g.strip()}
    return fields


def _loki_view(rec: dict[str, Any]) -> dict[str, Any]:
    """A log record as Loki's native OTLP ingestion presents it to LogQL: resource attributes as
    (index or metadata) fields and log attributes as structured metadata, dots as underscores,
    plus trace_id / span_id."""
    view = {promnames.label(k): v for k, v in {**rec["resource"], **rec["attributes"]}.items()}
    view.update(trace_id=rec["trace_id"], span_id=rec["span_id"])
    return view


@pytest.mark.parametrize("name", sorted(q.name for q in load_queries().values() if q.language == "logql"))
def test_logql_fields_exist_in_the_log_records(name: str, stack_run: StackRun) -> None:
    query = load_queries()[f"logql/{name}"].text
    fields = _loki_fields(query) - {"__tags"}
    assert fields, query
    views = [_loki_view(r) for r in sink_logs(stack_run)]
    for f in fields:
        assert any(f in v for v in views), f"{name}: no log record has the field {f!r}"
    for value in re.findall(r'agenttrail_event_type =~ "([^"]+)"', query):
        types = {v["agenttrail_event_type"] for v in views if "agenttrail_event_type" in v}
        assert any(re.fullmatch(value, t) for t in types), (
            f"{name}: no event matches {value!r} (have {types})"
        )


@pytest.mark.parametrize("name", sorted(q.name for q in load_queries().values() if q.language == "traceql"))
def test_traceql_attributes_and_values_exist_in_the_spans(name: str, stack_run: StackRun) -> None:
    query = load_queries()[f"traceql/{name}"].text
    spans = list(sink_spans(stack_run).values())
    for scope, attr in re.findall(r"\b(span|resource)\.([a-z_][a-z0-9_.]*[a-z0-9_])", query):
        where = "attributes" if scope == "span" else "resource"
        assert any(attr in s[where] for s in spans), f"{name}: no span has {scope}.{attr}"
    for attr, value in re.findall(r"span\.([a-z_.]+) = \"([^\"$]+)\"", query):
        assert any(s["attributes"].get(attr) == value for s in spans), f"{name}: no span has {attr}={value!r}"


def test_drilldown_finds_each_run_by_conversation_id(stack_run: StackRun) -> None:
    """run_trace.traceql filters on gen_ai.conversation.id and run_events.logql on agenttrail_run_id
    with the same $conversation_id: both must be the run id on every span and log record of a run."""
    by_trace: dict[str, set[str]] = {}
    for s in sink_spans(stack_run).values():
        by_trace.setdefault(s["trace_id"], set()).add(s["attributes"].get(names.CONVERSATION_ID))
        assert s["attributes"][names.CONVERSATION_ID] == s["attributes"][names.RUN_ID]
    assert all(len(ids) == 1 for ids in by_trace.values())
    run_logs = [r for r in sink_logs(stack_run) if names.RUN_ID in r["attributes"]]
    assert len(run_logs) > 0
    for r in run_logs:
        assert by_trace[r["trace_id"]] == {r["attributes"][names.RUN_ID]}
    # GenAI semconv events carry no run id (yet): they belong to a run's trace, so the trace view's
    # "logs for this span" link finds them, but the drill-down's LogQL (by run id) does not.
    for r in sink_logs(stack_run):
        assert r["trace_id"] in by_trace
