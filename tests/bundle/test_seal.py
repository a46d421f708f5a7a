"""Sealing a run: what lands in the bundle, scrubbing everywhere, atomic placement."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
import zstandard

import agenttrail as at
from agenttrail.bundle.reader import open_bundle
from agenttrail.bundle.verify import verify
from tests.conftest import Telemetry

SECRET = "sk-proj-" + "Q" * 32
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout


def _repo(ws: Path) -> None:
    ws.mkdir()
    (ws / "app.py").write_text("print('v1')\n")
    (ws / "README.md").write_text("# app\n")
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "initial")


@at.tool
def write(path: Path, text: str) -> dict[str, int]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return {"exit_code": 0}


def _tar_members(bundle: Path) -> dict[str, bytes]:
    with open(bundle / "workspace.tar.zst", "rb") as f, \
            tarfile.open(fileobj=zstandard.ZstdDecompressor().stream_reader(f), mode="r|") as tar:
        out = {}
        for m in tar:
            fh = tar.extractfile(m)
            out[m.name] = fh.read() if fh else b""
    return out


def test_failed_run_seals_workspace_diff_and_scrubs_everywhere(telemetry: Telemetry, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repo(ws)
    (ws / "README.md").write_text("# app, staged\n")
    _git(ws, "add", "README.md")  # the user's index state must survive the seal
    index_before = _git(ws, "ls-files", "--stage")
    with pytest.raises(RuntimeError), at.run("seal-1", "sealer", workspace=ws) as r:
        write(ws / "app.py", "print('v2')\n")
        write(ws / ".env", f"OPENAI_API_KEY={SECRET}\n")  # new, untracked, holds a secret
        write(ws / "node_modules" / "left-pad" / "index.js", "module.exports = 1\n")
        write(ws / "big.log", "x" * 64)
        write(ws / "PROGRESS.md", f"- [x] step one (key {SECRET})\n")
        raise RuntimeError(f"deploy failed with key {SECRET}")
    bundle = ws / "_debug"
    assert r.bundle_path == bundle
    b = open_bundle(bundle)
    m = b.manifest
    assert (m["status"], m["failure"]["type"]) == ("failed", "RuntimeError")
    assert SECRET not in json.dumps(m)

    diff = (bundle / "workspace.diff").read_text()
    assert "diff --git a/app.py b/app.py" in diff and "+print('v2')" in diff
    assert "diff --git a/.env b/.env\nnew file mode 100644" in diff  # untracked file included
    assert "+OPENAI_API_KEY=[REDACTED:openai_key]" in diff
    assert "node_modules" not in diff  # excluded like in the tar
    assert _git(ws, "ls-files", "--stage") == index_before  # the user's index is untouched
    assert "?? .env\n" in _git(ws, "status", "--porcelain")

    members = _tar_members(bundle)
    assert sorted(members) == [".env", "PROGRESS.md", "README.md", "app.py", "big.log"]
    assert members[".env"] == b"OPENAI_API_KEY=[REDACTED:openai_key]\n"  # scrubbed inside the tar
    assert (bundle / "progress" / "PROGRESS.md").read_text() == "- [x] step one (key [REDACTED:openai_key])\n"
    assert SECRET not in (bundle / "events.jsonl").read_text()
    # .env and PROGRESS.md each in the tar and in the diff, PROGRESS.md in progress/ (the exception
    # message was scrubbed by the recorder before it reached the events)
    assert m["redaction"] == {"content_capture": "NO_CONTENT", "secrets_scrubbed": 5, "scrubbed": True}
    assert m["options"]["workspace_exclude"][:2] == [".git", "node_modules"]
    assert verify(bundle).ok


def test_size_cap_skips_large_files_and_is_recorded(telemetry: Telemetry, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repo(ws)
    with at.run("seal-2", "sealer", workspace=ws, seal_on_success=True,
                bundle_options={"workspace_max_file_bytes": 100}) as r:
        write(ws / "huge.bin", "z" * 1000)
        write(ws / "small.txt", "s\n")
    m = open_bundle(r.bundle_path or ws / "none").manifest
    assert m["status"] == "succeeded"
    assert m["workspace"]["skipped_large"] == ["huge.bin"]
    assert m["options"]["workspace_max_file_bytes"] == 100
    diff = (ws / "_debug" / "workspace.diff").read_text()
    assert "diff --git a/small.txt b/small.txt" in diff and "huge.bin" not in diff


def test_successful_run_is_sealed_only_on_request(telemetry: Telemetry, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with at.run("ok-1", "sealer", workspace=ws) as r:
        write(ws / "a.txt", "a")
    assert r.status == "succeeded" and r.bundle_path is None and not (ws / "_debug").exists()
    with at.run("ok-2", "sealer", workspace=ws, seal_on_success=True) as r2:
        write(ws / "a.txt", "b")
    assert r2.bundle_path == ws / "_debug"
    assert open_bundle(ws / "_debug").manifest["status"] == "succeeded"


def test_no_scrub_keeps_secrets_and_says_so(telemetry: Telemetry, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with at.run("raw-1", "sealer", workspace=ws, bundle_options={"scrub": False}) as r:
        write(ws / "cfg.env", f"KEY={SECRET}\n")
        r.fail("evaluation failed", type="evaluation")
    m = open_bundle(ws / "_debug").manifest
    assert m["redaction"]["scrubbed"] is False and m["redaction"]["secrets_scrubbed"] == 0
    assert _tar_members(ws / "_debug")["cfg.env"] == f"KEY={SECRET}\n".encode()


def test_existing_bundle_is_moved_aside_never_overwritten(telemetry: Telemetry, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in (1, 2, 3):
        with at.run(f"again-{i}", "sealer", workspace=ws) as r:
            r.fail(f"attempt {i}")
    assert open_bundle(ws / "_debug").manifest["run_id"] == "again-3"
    assert open_bundle(ws / "_debug.1").manifest["run_id"] == "again-1"
    assert open_bundle(ws / "_debug.2").manifest["run_id"] == "again-2"
    # no temporary directory is left behind
    assert sorted(p.name for p in ws.iterdir() if p.name.startswith(".")) == [".agenttrail"]


def test_workspace_tar_is_a_plain_tree(telemetry: Telemetry, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "real.txt").write_text("r")
    os.symlink("/etc/passwd", ws / "link")
    with at.run("links-1", "sealer", workspace=ws) as r:
        r.fail("x")
    with open(ws / "_debug" / "workspace.tar.zst", "rb") as f, \
            tarfile.open(fileobj=zstandard.ZstdDecompressor().stream_reader(f), mode="r|") as tar:
        kinds = {m.name: m.type for m in tar}
    assert kinds == {"real.txt": tarfile.REGTYPE}


def test_rotated_spool_parts_are_joined_in_order_and_logs_metrics_kept(tmp_path: Path) -> None:
    from agenttrail.bundle.writer import seal_spool

    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "run.json").write_text(json.dumps({"run_id": "rot", "agent_name": "a"}))

    def ev(seq: int) -> str:
        return json.dumps({"seq": seq, "ts": f"2026-01-01T00:00:{seq:02d}.000000Z", "run_id": "rot",
                           "type": "plan"}) + "\n"

    (spool / "events.2.jsonl").write_text(ev(1) + ev(2))  # oldest
    (spool / "events.1.jsonl").write_text(ev(3))
    (spool / "events.jsonl").write_text(ev(4) + ev(5)[:20])  # torn last line
    log = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "token ghp_"
                                                                      + "a" * 36}}]}]}]}
    (spool / "logs.1.jsonl").write_text(json.dumps(log) + "\n")
    (spool / "logs.jsonl").write_text(json.dumps(log) + "\n")
    (spool / "metrics.jsonl").write_text(json.dumps({"resourceMetrics": []}) + "\n")
    out = seal_spool(spool, tmp_path / "b", status="failed", failure=None)
    b = open_bundle(out)
    assert [e["seq"] for _, e in b.iter_jsonl(out / "events.jsonl")] == [1, 2, 3, 4]
    assert [(w.file, w.line) for w in b.warnings.items] == [("events.jsonl", 5)]
    assert (out / "logs.jsonl").read_text().count("[REDACTED:github_token]") == 2
    assert (out / "metrics.jsonl").read_text() == '{"resourceMetrics": []}\n'
    m = b.manifest
    assert (m["started_at"], m["ended_at"]) == ("2026-01-01T00:00:01.000000Z", "2026-01-01T00:00:04.000000Z")
    assert m["redaction"]["secrets_scrubbed"] == 2
    assert sorted(m["files"]) == ["env.txt", "events.jsonl", "logs.jsonl", "metrics.jsonl", "tool_calls.csv"]
