"""run(): the event log, resume, operations, budgets, the recorder options."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from opentelemetry.trace import StatusCode

import agenttrail as at
from agenttrail.instrument._content import input_hash
from tests.conftest import Telemetry


def _events(spool_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (spool_dir / "events.jsonl").read_text().splitlines()]


@at.tool(side_effect=True)
def open_pr(branch: str) -> dict:
    return {"number": 17}


def test_event_signal_checkpoint_fail(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("e1", agent_name="builder", workspace=tmp_path, budget={"tokens": 100}) as r:
        assert r.event("plan", done_criteria=["build passes"], tools=["sh"]) == 2
        r.event("evaluation", data={"verdict": "fail"}, checks=3, actor="harness")
        r.signal("pause", by="alice")
        r.checkpoint("ck-1", {"step": 1}, step=1)
        r.fail("tests never pass", type="evaluation_failed")
    evs = _events(r.spool_dir)
    assert [(e["seq"], e["type"]) for e in evs] == [
        (1, "run.started"), (2, "plan"), (3, "evaluation"), (4, "signal"), (5, "checkpoint.saved"),
        (6, "error"), (7, "run.finished")]
    assert evs[1]["data"] == {"done_criteria": ["build passes"], "tools": ["sh"]}
    assert evs[1]["actor"] == "harness"
    assert evs[2]["data"] == {"verdict": "fail", "checks": 3}
    assert evs[3] == {**evs[3], "actor": "human", "data": {"kind": "pause", "by": "alice"}}
    assert evs[4]["data"] == {"checkpoint_id": "ck-1", "step": 1}
    assert evs[6]["data"] == {"status": "failed", "reason": "tests never pass",
                              "failure_type": "evaluation_failed"}
    root = telemetry.span("invoke_agent builder")
    assert all(e["trace_id"] == format(root.context.trace_id, "032x") for e in evs)
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == "evaluation_failed"
    # every run event is also a log event with the same type and seq, linked to the trace
    logs = [lr.log_record for lr in telemetry.logs.get_finished_logs()]
    assert [(lr.event_name, lr.attributes["agenttrail.event.seq"]) for lr in logs] == [
        (e["type"], e["seq"]) for e in evs]
    assert json.loads(logs[1].body) == {"done_criteria": ["build passes"], "tools": ["sh"]}
    assert r.bundle_path is not None and (r.bundle_path / "manifest.json").is_file()
    duration = telemetry.metric_points("gen_ai.invoke_agent.duration")
    assert [dict(p.attributes) for p in duration] == [
        {"gen_ai.agent.name": "builder", "error.type": "evaluation_failed"}]
    assert list(duration[0].explicit_bounds) == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2,
                                                 102.4, 204.8, 409.6]


def test_resume_continues_seq_and_records_worker(telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("e2", agent_name="builder", workspace=tmp_path, worker_id="w-1") as r:
        r.checkpoint("ck-7", {"step": 7}, step=7)
        with r.operation("pr.create", "org/repo", {"branch": "fix"}, key="fix") as op:
            op.succeeded(external_id="17")
        # the worker dies between intent and outcome of the next one
        r._record("operation.intent", "harness", {
            "operation_id": r.operation_id("deploy", "prod", "v2"), "kind": "deploy",
            "target": "prod", "args_hash": input_hash({"version": "v2"})})
    first_pass = _events(r.spool_dir)
    with at.run("e2", agent_name="builder", workspace=tmp_path, resume=True, worker_id="w-2") as r2:
        pending = r2.pending_operations()
        assert [p["kind"] for p in pending] == ["deploy"]
        # reconcile: same id as the unfinished intent, so the outcome closes it
        with r2.operation("deploy", "prod", {"version": "v2"}, key="v2") as op:
            assert op.operation_id == pending[0]["operation_id"]
            op.succeeded(external_id="already-deployed")
        assert r2.pending_operations() == []
    assert r2.resumed is True
    evs = _events(r.spool_dir)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    resumed = evs[len(first_pass)]
    assert resumed["type"] == "run.resumed"
    assert resumed["data"] == {"worker_id": "w-2", "from_checkpoint": "ck-7", "pending_operations": 1}
    assert [e["type"] for e in evs if e["type"] == "run.started"] == ["run.started"]
    outcome = [e["data"] for e in evs if e["type"] == "operation.outcome"]
    assert outcome == [
        {"operation_id": r.operation_id("pr.create", "org/repo", "fix"), "status": "succeeded",
         "external_id": "17"},
        {"operation_id": r.operation_id("deploy", "prod", "v2"), "status": "succeeded",
         "external_id": "already-deployed"}]
    roots = [s for s in telemetry.finished() if s.name == "invoke_agent builder"]
    assert [s.attributes.get("agenttrail.worker.id") for s in roots] == [None, "w-2"]


def test_operation_ids_are_stable_and_failures_recorded(tmp_path: Path, telemetry: Telemetry) -> None:
    with at.run("e3", agent_name="a", workspace=tmp_path) as r:
        a = r.operation_id("email.send", "bob@example.com", "welcome")
        assert a == r.operation_id("email.send", "bob@example.com", "welcome")
        assert a != r.operation_id("email.send", "bob@example.com", "reminder")
        with pytest.raises(TimeoutError), r.operation("email.send", "bob@example.com", key="x"):
            raise TimeoutError("smtp")
        with r.operation("email.send", "carol@example.com", key="y") as op:
            op.unknown()
    outcomes = [e["data"]["status"] for e in _events(r.spool_dir) if e["type"] == "operation.outcome"]
    assert outcomes == ["failed", "unknown"]
    other = at.Run("e3-other", agent_name="a", workspace=tmp_path)
    assert other.operation_id("email.send", "bob@example.com", "welcome") != a


def test_budget_modes(telemetry: Telemetry, tmp_path: Path) -> None:
    @at.llm(provider="openai", model="gpt-4o")
    def chat() -> dict:
        return {"usage": {"prompt_tokens": 60, "completion_tokens": 10}}

    with at.run("b1", agent_name="budgeted", workspace=tmp_path, budget={"tokens": 100}) as r:
        chat()
        chat()  # 140 > 100: recorded, run goes on
        chat()
    assert r.status == "succeeded"
    exceeded = [e["data"] for e in _events(r.spool_dir) if e["type"] == "budget.exceeded"]
    assert exceeded == [{"kind": "tokens", "limit": 100, "used": 140}]
    # a gauge keeps reporting its last value per series, so earlier tests' series show up too
    gauge = [p for p in telemetry.metric_points("agenttrail.budget.used_ratio")
             if p.attributes["gen_ai.agent.name"] == "budgeted"]
    assert [(p.value, dict(p.attributes)) for p in gauge] == [
        (2.1, {"gen_ai.agent.name": "budgeted", "agenttrail.budget.kind": "tokens"})]

    with at.run("b2", agent_name="a", workspace=tmp_path, budget={"tool_calls": 1},
                on_budget="fail") as r2:
        open_pr("x")
        open_pr("y")  # runs, but the run is now failed
    assert r2.status == "failed"
    assert r2.failure == {"type": "budget_exceeded", "message": "tool_calls budget of 1 exhausted (2 used)"}

    ran = []

    @at.tool
    def step(i: int) -> int:
        ran.append(i)
        return i

    with pytest.raises(at.RunFailed) as info, at.run(
            "b3", agent_name="a", workspace=tmp_path, budget={"tool_calls": 2}, on_budget="raise") as r3:
        for i in range(5):
            step(i)
    assert ran == [0, 1]  # the third call was refused before it ran
    assert info.value.failure_type == "budget_exceeded"
    assert r3.status == "failed" and r3.bundle_path is not None
    with pytest.raises(ValueError, match="on_budget"):
        at.run("b4", agent_name="a", on_budget="explode")


def test_recorder_options_move_and_disable_the_spool(telemetry: Telemetry, tmp_path: Path) -> None:
    spools, bundles = tmp_path / "spools", tmp_path / "bundles"
    at.configure(recorder={"spool_dir": spools, "bundle_dir": bundles, "max_file_bytes": 2000,
                           "max_files": 2})
    try:
        with at.run("o1", agent_name="a", workspace=tmp_path / "ws") as r:
            for i in range(60):
                r.event("tick", i=i, pad="x" * 50)
            r.fail("stop")
        assert r.spool_dir == spools / "o1"
        assert sorted(p.name for p in r.spool_dir.glob("events*.jsonl")) == [
            "events.1.jsonl", "events.2.jsonl", "events.jsonl"]
        assert all(p.stat().st_size < 2200 for p in r.spool_dir.glob("events*.jsonl"))
        assert r.bundle_path is not None and r.bundle_path.parent == bundles
        assert not (tmp_path / "ws" / ".agenttrail").exists()

        at.configure(recorder=False)
        with at.run("o2", agent_name="a", workspace=tmp_path / "ws2") as r2:
            assert [r2.event("tick", i=i) for i in range(3)] == [2, 3, 4]
            r2.fail("stop")
        assert r2.bundle_path is None and not (tmp_path / "ws2").exists()
        seqs = [lr.log_record.attributes["agenttrail.event.seq"] for lr in telemetry.logs.get_finished_logs()
                if lr.log_record.attributes["agenttrail.run.id"] == "o2"]
        assert seqs == [1, 2, 3, 4, 5, 6]
        with pytest.raises(TypeError, match="unknown recorder option"):
            at.configure(recorder={"spool": "x"})
    finally:
        at.configure(recorder=True)


def test_cancelled_and_user_exception_status(telemetry: Telemetry, tmp_path: Path) -> None:
    async def main() -> None:
        async with at.run("x1", agent_name="a", workspace=tmp_path):
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    err = RuntimeError("user bug")
    with pytest.raises(RuntimeError) as info, at.run("x2", agent_name="a", workspace=tmp_path) as r:
        raise err
    assert info.value is err
    assert r.status == "failed" and r.failure == {"type": "RuntimeError", "message": "user bug"}
    runs = telemetry.metric_points("agenttrail.runs")
    assert sorted((dict(p.attributes)["agenttrail.run.status"], p.value) for p in runs) == [
        ("cancelled", 1), ("failed", 1)]
