"""The fast read of trace files: rows never mix up, and odd but real attribute lists still load."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from agenttrail.store import open_store


def _line(span_id: str, resource: Sequence[tuple[str, Mapping[str, object]]] | None) -> str:
    span = {"traceId": "AB", "spanId": span_id, "name": "node act", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": [{"key": "k", "value": {"stringValue": span_id}}]}
    rs: dict[str, object] = {"scopeSpans": [{"scope": {"name": "s"}, "spans": [span]}]}
    if resource is not None:
        rs["resource"] = {"attributes": [{"key": k, "value": v} for k, v in resource]}
    return json.dumps({"resourceSpans": [rs]}) + "\n"


def test_each_span_keeps_its_own_resource_when_lines_differ(tmp_path: Path) -> None:
    """Every row keeps its own resource, whether lines repeat one or not."""
    first = [("service.name", {"stringValue": "a"}), ("pid", {"intValue": "7"})]
    lines = [
        _line("01", first),
        _line("02", [("service.name", {"stringValue": "b"}), ("ratio", {"doubleValue": 0.5}),
                     ("ok", {"boolValue": True})]),
        _line("03", first),
        _line("04", None),
        _line("05", [("service.name", {"stringValue": "a"})]),  # a prefix of the first: not equal
    ]
    (tmp_path / "trace.jsonl").write_text("".join(lines))
    store = open_store([tmp_path])
    got = store.sql("SELECT span_id, resource, attributes['k'] FROM spans ORDER BY span_id")
    store.close()
    assert got == [
        ("01", {"service.name": "a", "pid": "7"}, "01"),
        ("02", {"service.name": "b", "ratio": "0.5", "ok": "true"}, "02"),
        ("03", {"service.name": "a", "pid": "7"}, "03"),
        ("04", {}, "04"),
        ("05", {"service.name": "a"}, "05"),
    ]


def test_first_line_longer_than_the_sniffed_head_still_loads(tmp_path: Path) -> None:
    """A first line past the 64 KiB head the loader sniffs for the key spelling still loads."""
    big = [("service.name", {"stringValue": "x" * 70_000})]
    (tmp_path / "trace.jsonl").write_text(_line("01", big) + _line("02", big))
    store = open_store([tmp_path])
    got = store.sql("SELECT span_id, length(resource['service.name']) FROM spans ORDER BY span_id")
    store.close()
    assert got == [("01", 70_000), ("02", 70_000)]


def test_lines_longer_than_the_default_json_buffer_still_load_in_one_pass(tmp_path: Path) -> None:
    """Reads start with DuckDB's 16 MiB object size (parallel, small buffers) and retry at 1 GiB."""
    big = "y" * 34_000_000  # past DuckDB's 16 MiB maximum_object_size and its 32 MiB first buffer
    (tmp_path / "trace.jsonl").write_text(_line("01", None) + _line("02", [("blob", {"stringValue": big})]))
    events = [{"seq": 1, "ts": "2026-01-01T00:00:00Z", "run_id": "r", "type": "note", "data": {"text": big}},
              {"seq": 2, "ts": "2026-01-01T00:00:01Z", "run_id": "r", "type": "note", "data": {}}]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    store = open_store([tmp_path])
    spans = store.sql("SELECT span_id, lineno, length(resource['blob']) FROM spans ORDER BY span_id")
    got_events = store.sql("SELECT seq, lineno, length(data->>'text') FROM events ORDER BY seq")
    warnings = store.sql("SELECT * FROM load_warnings WHERE file <> 'manifest.json'")
    store.close()
    assert spans == [("01", None, None), ("02", None, 34_000_000)]  # lineno NULL: the one-pass read
    assert got_events == [(1, None, 34_000_000), (2, None, None)]
    assert warnings == []


def _attrs_line(span_id: str, attrs: list[dict[str, object]]) -> str:
    span = {"traceId": "ab", "spanId": span_id, "name": "chat m", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": attrs}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "s"}, "spans": [span]}]}]}) + "\n"


REPEATED = [{"key": "gen_ai.request.model", "value": {"stringValue": "first"}},
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "second"}},
            {"value": {"stringValue": "no key"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": 12}}]


def test_repeated_and_missing_keys_load_first_value_wins(tmp_path: Path) -> None:
    """OTLP forbids a repeated or missing key, but a hand-rolled exporter may write one (and DuckDB
    refuses to build such a MAP): the row still loads on both the one-pass and the line-by-line read,
    the lists keep every entry, and the typed columns and the ``attributes`` MAP take the first value."""
    for damaged in (False, True):
        d = tmp_path / f"damaged-{damaged}"
        d.mkdir()
        lines = [_attrs_line("01", REPEATED), _attrs_line("02", REPEATED[1:2])]
        if damaged:
            lines.insert(1, "{not json\n")  # forces the careful, line-by-line read
        (d / "trace.jsonl").write_text("".join(lines))
        store = open_store([d])
        got = store.sql("SELECT span_id, kind, request_model, input_tokens, attr_keys, attr_values, attributes "
                        "FROM spans ORDER BY span_id")
        warnings = store.sql("SELECT line, message FROM load_warnings WHERE file = 'trace.jsonl'")
        store.close()
        assert got == [
            ("01", "llm", "first", 12,
             ["gen_ai.request.model", "gen_ai.operation.name", "gen_ai.request.model", None,
              "gen_ai.usage.input_tokens"],
             ["first", "chat", "second", "no key", "12"],
             {"gen_ai.request.model": "first", "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": "12"}),
            ("02", "llm", None, None, ["gen_ai.operation.name"], ["chat"], {"gen_ai.operation.name": "chat"}),
        ], damaged
        assert warnings == ([(2, "not valid JSON; line skipped")] if damaged else []), damaged
