"""``agenttrail bundle verify`` on whole and on damaged bundles: every problem at file:line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from agenttrail.bundle.pack import pack, unpack
from agenttrail.bundle.reader import open_bundle
from agenttrail.bundle.verify import verify
from agenttrail.cli import cli
from agenttrail.store import open_store


def _copy(demo_bundle: Path, tmp_path: Path) -> Path:
    b = tmp_path / "b"
    shutil.copytree(demo_bundle, b)
    return b


def test_demo_bundle_verifies(demo_bundle: Path) -> None:
    r = CliRunner().invoke(cli, ["bundle", "verify", str(demo_bundle)])
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines[0] == f"bundle {demo_bundle} (run s_123)"
    assert lines[1:] == [
        "  ok       manifest.json schema",
        "  ok       10 files match their manifest hashes",
        "  ok       trace.jsonl: 93 spans in 93 document(s), ids well-formed",
        "  ok       159 events, seq strictly increasing",
        "  ok       every event's span_id is in the trace",
        "  ok       tool_calls.csv: header and 30 rows",
        "verdict: OK",
    ]


def test_torn_and_corrupt_lines_are_reported_and_the_rest_still_loads(demo_bundle: Path,
                                                                      tmp_path: Path) -> None:
    b = _copy(demo_bundle, tmp_path)
    lines = (b / "events.jsonl").read_text().splitlines()
    lines[9] = lines[9][:25]  # a corrupt line in the middle
    lines[-1] = lines[-1][:40]  # torn last line, as a killed worker leaves it
    lines[20], lines[21] = lines[21], lines[20]  # seq out of order
    (b / "events.jsonl").write_text("\n".join(lines) + "\n")
    with open(b / "tool_calls.csv", "a") as fh:
        fh.write("2026-01-01T00:00:00Z,run_command\n")
    result = verify(b)
    assert not result.ok
    assert result.errors == [
        "events.jsonl: sha256 differs from the manifest (changed after sealing)",
        "tool_calls.csv: sha256 differs from the manifest (changed after sealing)",
        f"events.jsonl:22: seq {json.loads(lines[21])['seq']} not strictly increasing (previous "
        f"{json.loads(lines[20])['seq']})",
        "tool_calls.csv:32: 2 fields, the header has 14",
        "events.jsonl:10: not valid JSON (Invalid control character at); line skipped",
        "events.jsonl:159: not valid JSON (Invalid control character at); line skipped",
    ]
    assert "  ok       157 events read" in result.lines()  # the rest of the log still reads
    store = open_store([b])
    assert store.sql("SELECT count(*) FROM events")[0][0] == 157
    assert store.rows("SELECT file, line FROM load_warnings WHERE file = 'events.jsonl' ORDER BY line") == [
        {"file": "events.jsonl", "line": 10}, {"file": "events.jsonl", "line": 159}]
    r = CliRunner().invoke(cli, ["bundle", "verify", str(b)])
    assert r.exit_code == 2
    assert r.output.splitlines()[-1] == "verdict: 6 error(s)"


def test_unknown_files_and_fields_survive_pack_and_unpack(demo_bundle: Path, tmp_path: Path) -> None:
    b = _copy(demo_bundle, tmp_path)
    m = json.loads((b / "manifest.json").read_text())
    m["x_team"] = {"owner": "infra"}
    (b / "manifest.json").write_text(json.dumps(m))
    (b / "extra").mkdir()
    (b / "extra" / "notes.txt").write_text("kept")
    out = unpack(pack(b, tmp_path / "b.tar.zst"), tmp_path / "out")
    assert (out / "extra" / "notes.txt").read_text() == "kept"
    assert open_bundle(out).manifest["x_team"] == {"owner": "infra"}
    result = verify(out)
    assert result.ok
    assert result.warnings == ["1 file(s) not in the manifest's index (kept): extra/notes.txt"]


def test_trace_problems_name_file_and_line(tmp_path: Path) -> None:
    b = tmp_path / "b"
    b.mkdir()
    (b / "manifest.json").write_text(json.dumps(
        {"format": "agenttrail.bundle", "version": 1, "run_id": "r", "status": "failed"}))
    good = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "s"}, "spans": [
        {"traceId": "a" * 32, "spanId": "b" * 16, "name": "ok"}]}]}]}
    bad_ids = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "AAECAwQFBgcICQoLDA0ODw==", "spanId": "b" * 16, "name": "base64"}]}]}]}
    (b / "trace.jsonl").write_text("\n".join([json.dumps(good), "{oops", json.dumps({"x": 1}),
                                              json.dumps(bad_ids)]) + "\n")
    (b / "trace.json").write_text(json.dumps(good))
    result = verify(b)
    assert result.errors == [
        "trace.jsonl:3: not an OTLP trace document (no resourceSpans)",
        "trace.jsonl:4: span 'base64' has ids 'AAECAwQFBgcICQoLDA0ODw=='/'bbbbbbbbbbbbbbbb', not 32/16 hex "
        "digits",
        "trace.jsonl:2: not valid JSON (Expecting property name enclosed in double quotes); line skipped",
    ]
    assert result.warnings == ["both trace.json and trace.jsonl present: readers load both (spans may repeat)"]
    assert "  ok       trace.json: 1 spans in 1 document(s), ids well-formed" in result.lines()
