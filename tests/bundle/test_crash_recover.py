"""A real worker process killed with SIGKILL mid-run leaves a spool that recovers into a bundle."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from click.testing import CliRunner

from agenttrail.bundle.reader import open_bundle
from agenttrail.bundle.verify import verify
from agenttrail.cli import cli

WORKER = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    import agenttrail as at

    at.configure(service_name="crash-worker", exporters=False)
    ws = Path(sys.argv[1])

    @at.tool
    def build_step(n: int) -> dict:
        if n == 6:
            print("stuck 6", flush=True)
            time.sleep(600)  # killed here, inside the sixth tool call
        (ws / f"out{n}.txt").write_text(f"step {n}\\n")
        return {"exit_code": 0}

    with at.run("crash-run", "crash-agent", workspace=ws) as r:
        for n in range(1, 100):
            build_step(n)
            r.checkpoint(f"ck{n}", {"step": n, "token": "sk-proj-" + "x" * 30}, step=n)
            print(f"done {n}", flush=True)
''')


def _kill_worker_mid_run(ws: Path, tmp: Path) -> list[str]:
    script = tmp / "worker.py"
    script.write_text(WORKER)
    proc = subprocess.Popen([sys.executable, str(script), str(ws)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    said: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            said.append(line.strip())
            if line.startswith("stuck"):
                break
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return said


def test_sigkill_mid_run_recovers_a_bundle_ending_at_the_last_completed_step(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    said = _kill_worker_mid_run(ws, tmp_path)
    assert said == [f"done {n}" for n in range(1, 6)] + ["stuck 6"]
    assert not (ws / "_debug").exists()  # the worker had no chance to seal

    r = CliRunner().invoke(cli, ["bundle", "recover", str(ws)])
    assert r.exit_code == 0, r.output
    assert r.output == f"recovered: {ws.resolve() / '_debug'}\n"
    bundle = ws / "_debug"

    result = verify(bundle)
    assert result.ok, result.lines()
    b = open_bundle(bundle)
    m = b.manifest
    assert (m["run_id"], m["status"], m["recovered"]) == ("crash-run", "failed", True)
    assert m["failure"]["type"] == "worker_lost"
    events = [e for _, e in b.iter_jsonl(bundle / "events.jsonl")]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    kinds = [e["type"] for e in events]
    # run.started, then per completed step: tool.started, tool.finished, checkpoint.saved; then the
    # sixth call's tool.started — and nothing after it
    assert kinds == ["run.started"] + ["tool.started", "tool.finished", "checkpoint.saved"] * 5 + [
        "tool.started"]
    assert [e["data"]["step"] for e in events if e["type"] == "checkpoint.saved"] == [1, 2, 3, 4, 5]
    assert events[-1]["data"]["tool"] == "build_step"

    checkpoints = [json.loads(x) for x in (bundle / "checkpoints.jsonl").read_text().splitlines()]
    assert [c["checkpoint_id"] for c in checkpoints] == ["ck1", "ck2", "ck3", "ck4", "ck5"]
    last_state = json.loads((bundle / "last_state.json").read_text())
    assert last_state == {"step": 5, "token": "[REDACTED:openai_key]"}
    assert m["redaction"]["secrets_scrubbed"] == 6  # the key in 5 checkpoints and in last_state
    with open(bundle / "tool_calls.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["status"] for r in rows] == ["ok"] * 5 + ["unfinished"]
    # spans of the five finished tool calls reached the spool; the sixth and the run span never ended
    spans = [s for _, doc in b.iter_jsonl(bundle / "trace.jsonl")
             for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert [s["name"] for s in spans] == ["execute_tool build_step"] * 5
    workspace_files = m["workspace"]["files"]
    assert workspace_files == 5  # out1..out5.txt


def test_recover_without_a_spool_is_exit_2(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["bundle", "recover", str(tmp_path)])
    assert r.exit_code == 2
    assert f"{tmp_path.resolve()}: no spooled run under .agenttrail/spool" in r.stderr
