"""Trace/event lines of the wrong shape: warnings with file:line when some data is readable, exit 2 when none is."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from agenttrail.cli import cli

GOOD = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "spanId": "cd", "name": "n",
                                                       "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}


def _bundle(tmp_path: Path, trace_lines: list[str], events: list[str] | None = None) -> Path:
    d = tmp_path / "b"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"run_id": "x", "status": "failed"}))
    (d / "trace.jsonl").write_text("\n".join(trace_lines) + "\n")
    if events is not None:
        (d / "events.jsonl").write_text("\n".join(events) + "\n")
    return d


def test_wrong_shape_lines_are_warnings_with_lines(tmp_path: Path) -> None:
    b = _bundle(tmp_path, [json.dumps(GOOD), '{"resourceSpans": "oops"}',
                           '{"resourceSpans": [{"scopeSpans": [{"spans": "bad"}]}]}', "[1, 2]"],
                [json.dumps({"seq": "abc", "ts": "2026-01-01T00:00:00Z", "run_id": "x", "type": "note"})])
    r = CliRunner().invoke(cli, ["analyze", str(b), "--format", "json", "--no-cache"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [(w["file"], w["line"], w["message"]) for w in doc["warnings"]] == [
        ("events.jsonl", 1, "event lacks an integer seq; kept"),
        ("trace.jsonl", 2, "no resourceSpans list: not an OTLP/JSON ExportTraceServiceRequest; line skipped"),
        ("trace.jsonl", 3, "scopeSpans[].spans is not a list; those spans skipped"),
        ("trace.jsonl", 4, "not a JSON object; line skipped")]
    assert doc["runs"][0]["spans"] == 1
    assert doc["findings"] == []  # a NULL seq is not a duplicate seq


def test_nothing_readable_is_exit_2_with_file_and_line(tmp_path: Path) -> None:
    b = _bundle(tmp_path, ["garbage", '{"a": 1}'])
    r = CliRunner().invoke(cli, ["analyze", str(b), "--no-cache"])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"agenttrail: error: {b / 'trace.jsonl'}:1: no line of trace.jsonl could be "
                               "read as OTLP/JSON traces")
    assert "Traceback" not in r.output
