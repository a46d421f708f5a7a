"""``agenttrail bundle import`` from traces real instrumentation libraries produced in this test run.

tests/bundle/trace_producers.py runs each library (OpenLLMetry's, OpenInference's, the official
GenAI OpenAI instrumentation and Pydantic Logfire's ``instrument_openai``) around the real ``openai``
client against a local Chat Completions server, in its own process (each sets the global tracer
provider), and writes the same spans as OTLP/JSON lines, protobuf JSON (camel and snake case), a Tempo
API body and Jaeger JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner

from agenttrail.bundle.importers import import_bundle
from agenttrail.bundle.reader import open_bundle
from agenttrail.bundle.verify import verify
from agenttrail.cli import _register_optional, cli
from agenttrail.detect import run_detectors
from agenttrail.errors import BundleError, BundleFormatError
from agenttrail.store import open_store

HERE = Path(__file__).resolve().parent
FORMATS = {"otlp-lines": "otlp_json", "protojson": "otlp_json", "protojson-snake": "otlp_json",
           "tempo": "tempo", "jaeger": "jaeger"}
SESSION = "sess-import-1"
_register_optional()  # adds `bundle import` to the click group, as main() does


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out: dict[str, Path] = {}
    base = tmp_path_factory.mktemp("traces")
    procs = {lib: subprocess.Popen([sys.executable, str(HERE / "trace_producers.py"), lib, str(base / lib)],
                                   stderr=subprocess.PIPE, text=True)
             for lib in ("official", "openllmetry", "openinference", "logfire")}
    for lib, p in procs.items():
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        out[lib] = base / lib
    return out


def _spans(bundle: Path) -> list[dict[str, Any]]:
    b = open_bundle(bundle)
    return [s for _, doc in b.iter_jsonl(bundle / "trace.jsonl")
            for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _canonical(spans: list[dict[str, Any]], jaeger: bool = False) -> list[tuple[Any, ...]]:
    """What every format must carry alike. Jaeger keeps microseconds and writes arrays as JSON text,
    so the comparison with it does the same."""

    def value(v: dict[str, Any]) -> Any:
        if "arrayValue" in v:
            items = [next(iter(x.values())) for x in v["arrayValue"]["values"]]
            return json.dumps(items) if jaeger else items
        return next(iter(v.values()))

    def start(s: dict[str, Any]) -> str:
        return str(int(s["startTimeUnixNano"]) // 1000 * 1000) if jaeger else s["startTimeUnixNano"]

    return sorted((s["traceId"], s["spanId"], s.get("parentSpanId"), s["name"], s["kind"], start(s),
                   s["status"]["code"],
                   json.dumps({a["key"]: value(a["value"]) for a in s["attributes"]}, sort_keys=True))
                  for s in spans)


class Expected(NamedTuple):
    scope: str  # of the LLM spans
    conventions: dict[str, int]  # the import's tally
    run_id: str | None  # the session the spans name (None: nothing does, the trace id is the run)
    request_model: str  # of the call that succeeded, as the store maps it
    error_type: str  # of the call that got HTTP 500
    error: str  # its status message


_500 = "Error code: 500 - upstream overloaded"
EXPECTED = {
    "official": Expected("opentelemetry.instrumentation.genai.openai", {"genai": 2, "other": 1}, SESSION,
                         "gpt-4o", "openai.InternalServerError", _500),
    "openllmetry": Expected("opentelemetry.instrumentation.openai.v1", {"openllmetry": 2, "other": 1}, None,
                            "gpt-4o", "InternalServerError", _500),
    # OpenInference writes the response's model as llm.model_name; the exception type is in the event
    "openinference": Expected("openinference.instrumentation.openai", {"openinference": 2, "other": 1},
                              SESSION, "gpt-4o-2024-08-06", "openai.InternalServerError",
                              f"InternalServerError: {_500}"),
    # Logfire's tracer provider adds logfire.* attributes to every span, the harness's root too; the
    # session is baggage it copies onto every span; the exception type is only in the event
    "logfire": Expected("logfire.openai", {"logfire": 3}, SESSION, "gpt-4o", "openai.InternalServerError",
                        f"InternalServerError: {_500}"),
}


@pytest.mark.parametrize("library", sorted(EXPECTED))
def test_every_export_format_imports_to_the_same_spans(library: str, produced: dict[str, Path],
                                                       tmp_path: Path) -> None:
    scope, conventions, run_id = EXPECTED[library][:3]
    canon = {}
    for fmt, kind in FORMATS.items():
        r = import_bundle([produced[library] / f"{fmt}.json"], tmp_path / fmt, run_id=None)
        assert (r.spans, r.formats) == (3, {str(produced[library] / f"{fmt}.json"): kind})
        assert r.conventions == conventions
        assert r.warnings == []
        result = verify(tmp_path / fmt)
        assert result.ok, result.lines()
        spans = _spans(tmp_path / fmt)
        docs = [d for _, d in open_bundle(tmp_path / fmt).iter_jsonl(tmp_path / fmt / "trace.jsonl")]
        assert {ss["scope"]["name"] for d in docs for rs in d["resourceSpans"] for ss in rs["scopeSpans"]
                } == {scope, "demo-harness"}
        assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
        canon[fmt] = _canonical(spans)
        if fmt == "jaeger":
            canon["otlp-lines-as-jaeger"] = _canonical(_spans(tmp_path / "otlp-lines"), jaeger=True)
        m = open_bundle(tmp_path / fmt).manifest
        if run_id is None:  # nothing in OpenLLMetry's spans names a session: the trace id does
            assert m["run_id"] == spans[0]["traceId"]
        else:
            assert m["run_id"] == run_id
        assert (m["status"], m["failure"]) == ("failed", {"type": "upstream_overloaded",
                                                          "message": "model call failed: 500"})
        assert m["agent_name"] == f"{library}-agent"
        assert m["imported"]["sources"][0]["spans"] == 3
    # ids, parents, names, kinds, times, status and attributes are the same in all five formats
    assert canon.pop("jaeger") == canon.pop("otlp-lines-as-jaeger")
    reference = canon.pop("otlp-lines")
    for fmt, got in canon.items():
        assert got == reference, fmt


@pytest.mark.parametrize("library", sorted(EXPECTED))
def test_imported_bundle_analyses_like_a_native_one(library: str, produced: dict[str, Path],
                                                    tmp_path: Path) -> None:
    x = EXPECTED[library]
    out = tmp_path / "b"
    import_bundle([produced[library] / "protojson.json"], out, run_id="run-x")
    store = open_store([out])
    calls = store.rows("SELECT provider, model, request_model, input_tokens, output_tokens, error_type, error "
                       "FROM llm_calls ORDER BY ts")
    assert calls == [
        {"provider": "openai", "model": "gpt-4o-2024-08-06", "request_model": x.request_model,
         "input_tokens": 12, "output_tokens": 3, "error_type": None, "error": None},
        {"provider": "openai", "model": "gpt-4o", "request_model": "gpt-4o", "input_tokens": 0,
         "output_tokens": 0, "error_type": x.error_type, "error": x.error},
    ]
    assert store.rows("SELECT run_id, status, failure_type FROM runs") == [
        {"run_id": "run-x", "status": "failed", "failure_type": "upstream_overloaded"}]
    # the session each convention names reaches the LLM calls (the run id given overrides it)
    assert store.rows("SELECT kind, operation, conversation_id, run_id FROM spans ORDER BY start_ns") == [
        {"kind": "other", "operation": None, "conversation_id": SESSION if library == "logfire" else None,
         "run_id": "run-x"},
        *[{"kind": "llm", "operation": "chat", "conversation_id": x.run_id, "run_id": "run-x"}] * 2]
    analysis = run_detectors(store)  # every detector runs on them; none has anything to report
    assert (analysis.findings, analysis.failures) == ([], [])
    if library == "openinference":  # GenAI names were added next to OpenInference's own
        attrs = store.rows("SELECT attributes['gen_ai.usage.input_tokens'] AS i, "
                           "attributes['llm.token_count.prompt'] AS p, "
                           "attributes['gen_ai.conversation.id'] AS c FROM spans WHERE kind = 'llm' "
                           "AND status_code <> 2")
        assert attrs == [{"i": "12", "p": "12", "c": SESSION}]


def test_cli_import_many_sources_and_packed_round_trip(produced: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "multi"
    r = CliRunner().invoke(cli, ["bundle", "import", str(produced["official"] / "otlp-lines.json"),
                                 str(produced["openinference"] / "tempo.json"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output == (f"imported: {out} (run {SESSION}; 6 spans from 2 file(s); "
                        "conventions: genai 2, openinference 2, other 2)\n")
    packed = tmp_path / "multi.tar.zst"
    assert CliRunner().invoke(cli, ["bundle", "pack", str(out), "-o", str(packed)]).exit_code == 0
    v = CliRunner().invoke(cli, ["bundle", "verify", str(packed)])
    assert v.exit_code == 0, v.output
    assert v.output.splitlines()[-1] == "verdict: OK"


def test_corrupt_lines_are_reported_and_the_rest_imported(produced: dict[str, Path], tmp_path: Path) -> None:
    good = (produced["openllmetry"] / "otlp-lines.json").read_text().splitlines()
    src = tmp_path / "torn.jsonl"
    src.write_text("\n".join([good[0], '{"resourceSpans": [', good[1], '{"unrelated": 1}', good[2]]) + "\n")
    r = import_bundle([src], tmp_path / "b", run_id="torn")
    assert r.spans == 3
    assert [(w.file, w.line, w.message.split(" (")[0].split(";")[0]) for w in r.warnings] == [
        ("torn.jsonl", 2, "not valid JSON"), ("torn.jsonl", 4, "not an OTLP/JSON trace document")]
    assert open_bundle(tmp_path / "b").manifest["imported"]["warnings"][0]["line"] == 2


def test_secrets_in_imported_attributes_are_scrubbed(produced: dict[str, Path], tmp_path: Path) -> None:
    doc = json.loads((produced["openinference"] / "protojson.json").read_text())
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"].append({"key": "http.request.header.authorization",
                               "value": {"stringValue": "Bearer abcdefghijklmnopqrstuvwxyz123456"}})
    src = tmp_path / "leaky.json"
    src.write_text(json.dumps(doc))
    import_bundle([src], tmp_path / "b")
    text = (tmp_path / "b" / "trace.jsonl").read_text()
    assert "abcdefghijklmnopqrstuvwxyz123456" not in text and "Bearer [REDACTED:bearer_token]" in text
    assert open_bundle(tmp_path / "b").manifest["redaction"]["secrets_scrubbed"] == 1
    import_bundle([src], tmp_path / "raw", scrub=False)
    assert "abcdefghijklmnopqrstuvwxyz123456" in (tmp_path / "raw" / "trace.jsonl").read_text()


def test_not_a_trace_file_is_a_readable_error(tmp_path: Path) -> None:
    src = tmp_path / "notes.json"
    src.write_text('{"hello": "world"}')
    with pytest.raises(BundleFormatError, match="not a trace export agenttrail knows"):
        import_bundle([src], tmp_path / "b")
    assert not (tmp_path / "b").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["notes.json"]  # no temporary directory left
    r = CliRunner().invoke(cli, ["bundle", "import", str(tmp_path / "missing.json"), "-o", str(tmp_path / "c")])
    assert r.exit_code == 2 and "missing.json: no such file or directory" in r.stderr
    with pytest.raises(BundleError, match="--langgraph-sqlite needs --thread-id"):
        import_bundle([], tmp_path / "d", langgraph_sqlite=tmp_path / "db.sqlite")


def _langgraph_db(db: Path) -> None:
    """A real LangGraph graph run to completion on thread t-1 with a SqliteSaver checkpointer."""
    import sqlite3
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        step: int
        notes: str

    def plan(state: State) -> dict[str, Any]:
        return {"step": state["step"] + 1, "notes": state["notes"] + "planned;"}

    def act(state: State) -> dict[str, Any]:
        return {"step": state["step"] + 1, "notes": state["notes"] + "acted with sk-proj-" + "z" * 30}

    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("act", act)
    g.add_edge(START, "plan")
    g.add_edge("plan", "act")
    g.add_edge("act", END)
    conn = sqlite3.connect(str(db), check_same_thread=False)
    try:
        graph = g.compile(checkpointer=SqliteSaver(conn))
        graph.invoke({"step": 0, "notes": ""}, {"configurable": {"thread_id": "t-1"}})
    finally:
        conn.close()


def test_import_langgraph_sqlite_thread_with_traces(produced: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "graph.sqlite"
    _langgraph_db(db)
    out = tmp_path / "lg"
    r = CliRunner().invoke(cli, ["bundle", "import", str(produced["openinference"] / "otlp-lines.json"),
                                 "--langgraph-sqlite", str(db), "--thread-id", "t-1", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[1] == "  langgraph thread t-1: 4 checkpoints, last step 2"
    checkpoints = [json.loads(x) for x in (out / "checkpoints.jsonl").read_text().splitlines()]
    assert [c["step"] for c in checkpoints] == [-1, 0, 1, 2]
    assert json.loads((out / "last_state.json").read_text()) == {
        "step": 2, "notes": "planned;acted with [REDACTED:openai_key]"}
    m = open_bundle(out).manifest
    assert m["imported"]["langgraph"]["checkpoints"] == 4
    assert sorted(m["files"]) == ["checkpoints.jsonl", "last_state.json", "trace.jsonl"]
    result = verify(out)
    assert result.ok, result.lines()
    # only the thread: no traces, run id from the thread
    only = import_bundle([], tmp_path / "only", langgraph_sqlite=db, thread_id="t-1")
    assert only.run_id == "t-1" and only.spans == 0
    with pytest.raises(BundleError, match="thread 'nope' has no checkpoints"):
        import_bundle([], tmp_path / "none", langgraph_sqlite=db, thread_id="nope")
