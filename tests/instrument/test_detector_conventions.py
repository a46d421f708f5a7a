"""What the instrument writes is what the detectors read: end to end, our own bundles light them up."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import agenttrail as at
from agenttrail.detect import run_detectors
from agenttrail.store import open_store
from tests.conftest import Telemetry


def _findings(bundle: Path, code: str) -> list[dict]:
    store = open_store([bundle])
    try:
        return [f.as_dict() for f in run_detectors(store, [code]).findings]
    finally:
        store.close()


def test_every_event_names_its_worker(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("w1", agent_name="a", workspace=tmp_path, worker_id="pod-7", seal_on_success=True) as r:
        r.event("plan", done_criteria=["tests pass"])
    lines = [json.loads(x) for x in (r.bundle_path / "events.jsonl").read_text().splitlines()]
    assert [(e["type"], e["worker_id"]) for e in lines] == [
        ("run.started", "pod-7"), ("plan", "pod-7"), ("run.finished", "pod-7")]


def test_two_workers_writing_one_run_are_caught(telemetry: Telemetry, tmp_path: Path) -> None:
    """No fencing: a supervisor restarted the run while the first worker was still alive."""
    step = threading.Barrier(2)

    def worker(name: str, resume: bool) -> None:
        with at.run("w2", agent_name="a", workspace=tmp_path, worker_id=name, resume=resume):
            for i in range(3):
                step.wait(timeout=10)
                at.current_run().event("step", n=i)  # type: ignore[union-attr]

    first = threading.Thread(target=worker, args=("pod-1", False))
    first.start()
    # the second worker starts once the first has begun its run
    while not (tmp_path / ".agenttrail/spool/w2/events.jsonl").exists():
        threading.Event().wait(0.01)
    second = threading.Thread(target=worker, args=("pod-2", True))
    second.start()
    first.join(timeout=30)
    second.join(timeout=30)
    from agenttrail.bundle.recover import recover

    (bundle,) = recover(tmp_path)
    found = _findings(bundle, "concurrent_writers")
    assert [f["code"] for f in found] == ["concurrent_writers"]
    assert found[0]["severity"] == "error"
    assert set(found[0]["workers"]) == {"pod-1", "pod-2"}


def test_declared_write_paths_make_drift_visible(telemetry: Telemetry, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('v1')\n")
    (ws / "deploy.yaml").write_text("replicas: 1\n")
    git = ["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    with at.run("w3", agent_name="a", workspace=ws, write_paths=["src/**"]) as r:
        (ws / "src" / "app.py").write_text("print('v2')\n")
        (ws / "deploy.yaml").write_text("replicas: 50\n")  # outside what the run declared
        r.fail("evaluation failed", type="evaluation_failed")
    found = _findings(r.bundle_path, "workspace_drift")
    assert len(found) == 1
    assert "deploy.yaml" in found[0]["summary"]
    assert "src/app.py" not in json.dumps(found[0].get("paths", found[0]["summary"]))


def test_early_context_handoff_is_context_pressure(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("w4", agent_name="a", workspace=tmp_path, seal_on_success=True) as r:
        r.context_handoff("summarised to stay safe", context_tokens=30_000, context_window=200_000)
    events = [json.loads(x) for x in (r.bundle_path / "events.jsonl").read_text().splitlines()]
    handoff = next(e for e in events if e["type"] == "context.handoff")
    assert handoff["data"] == {"reason": "summarised to stay safe", "context_tokens": 30_000,
                               "context_window": 200_000}
    found = _findings(r.bundle_path, "context_pressure")
    assert [f["code"] for f in found] == ["context_pressure"]
    assert "15%" in found[0]["summary"]


def test_genai_log_events_are_spooled_into_logs_jsonl(telemetry: Telemetry, tmp_path: Path) -> None:
    """The bundle keeps the run's GenAI log events (here the exception event of a failed inference) as
    OTLP/JSON; the run events mirrored as logs are not duplicated (events.jsonl holds them)."""

    class Overloaded(Exception):
        status_code = 529

    @at.llm(provider="anthropic", model="claude-sonnet-4")
    def think(prompt: str) -> dict:
        raise Overloaded("overloaded, try again (key sk-ant-" + "a" * 30 + ")")

    with at.run("w5", agent_name="a", workspace=tmp_path) as r:
        try:
            think("hi")
        except Overloaded:
            r.fail("model overloaded", type="model_error")
    lines = [json.loads(x) for x in (r.bundle_path / "logs.jsonl").read_text().splitlines()]
    assert len(lines) == 1
    (record,) = lines[0]["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert record["eventName"] == "gen_ai.client.operation.exception"
    assert record["severityText"] == "WARN"
    attrs = {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}
    assert attrs["exception.type"].endswith("Overloaded")
    assert attrs["exception.message"] == "overloaded, try again (key [REDACTED:anthropic_key])"
    assert attrs["agenttrail.run.id"] == "w5"
    chat = telemetry.span("chat claude-sonnet-4")
    assert record["spanId"] == format(chat.context.span_id, "016x")
    manifest = json.loads((r.bundle_path / "manifest.json").read_text())
    assert "logs.jsonl" in manifest["files"]
