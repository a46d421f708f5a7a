"""Bad input: one clear message, exit 2, never a traceback; partial data still analysed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from agenttrail.cli import cli


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_missing_path() -> None:
    r = _run("analyze", "/nonexistent/bundle")
    assert r.exit_code == 2
    assert r.stderr.startswith("agenttrail: error: /nonexistent/bundle: no such file or directory\n")
    assert "Traceback" not in r.output


def test_not_a_bundle(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    for cmd in ("analyze", "report"):
        r = _run(cmd, str(tmp_path))
        assert r.exit_code == 2
        assert "not a bundle — no manifest.json, events.jsonl or trace.json(l) inside" in r.stderr
    r = _run("analyze", str(tmp_path / "notes.txt"))
    assert r.exit_code == 2 and "not a bundle (a directory, .tar.zst, .tar.gz or .zip)" in r.stderr


def test_corrupt_manifest_names_file_and_line(demo_bundle: Path, tmp_path: Path) -> None:
    b = tmp_path / "b"
    shutil.copytree(demo_bundle, b)
    (b / "manifest.json").write_text('{\n  "run_id": "s_1",\n  oops\n}')
    r = _run("analyze", str(b))
    assert r.exit_code == 2
    assert f"{b / 'manifest.json'}:3: manifest.json is not valid JSON" in r.stderr


def test_corrupt_event_line_is_a_warning_and_the_rest_is_analysed(demo_bundle: Path, tmp_path: Path) -> None:
    b = tmp_path / "b"
    shutil.copytree(demo_bundle, b)
    lines = (b / "events.jsonl").read_text().splitlines()
    lines[4] = lines[4][:30]  # torn line 5
    (b / "events.jsonl").write_text("\n".join(lines) + "\n")
    r = _run("analyze", str(b), "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [(w["file"], w["line"], w["message"]) for w in doc["warnings"]] == [
        ("events.jsonl", 5, "not valid JSON; line skipped")]
    assert [f["code"] for f in doc["findings"]] == ["retry_loop"]
    text = _run("analyze", str(b)).stdout
    assert text.startswith("Load warnings (1): the analysis below ran on what could be read\n"
                           "  bundle 1 events.jsonl:5: not valid JSON; line skipped\n")


def test_unknown_detector_and_bad_set() -> None:
    r = _run("analyze", ".", "--detector", "nope")
    assert r.exit_code == 2
    r = _run("analyze", "--set", "oops", ".")
    assert r.exit_code == 2


def test_sql_command(demo_bundle: Path) -> None:
    r = _run("sql", str(demo_bundle), "SELECT tool, count(*) AS n FROM tool_calls GROUP BY 1 ORDER BY 2 DESC",
             "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == [{"tool": "run_command", "n": 27}, {"tool": "write_file", "n": 2},
                                    {"tool": "read_file", "n": 1}]
    r = _run("sql", str(demo_bundle), "SELECT nope FROM tool_calls")
    assert r.exit_code == 2 and "query failed" in r.stderr
    r = _run("sql", str(demo_bundle), "--query", "tool_latency")
    assert r.exit_code == 0 and "run_command" in r.stdout
