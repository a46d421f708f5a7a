"""The framework examples run offline end to end, and their bundles carry the intended failure.

Findings: ``duplicate_side_effect`` (research agent) and ``rate_limit`` (triage) are the detectors
that must fire, and nothing else; the tests also assert the raw evidence in the store, so they still
say what is wrong when a detector is not installed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agenttrail.detect.registry import available, run_detectors
from agenttrail.store import open_store
from tests.conftest import Telemetry
from tests.integrations.pgserver import pg_bindir, postgres_server


def _events(bundle: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (bundle / "events.jsonl").read_text().splitlines()]


def _finding_codes(bundle: Path, code: str) -> list[str] | None:
    """Every finding's code, once the detector meant to catch this failure is installed."""
    if code not in available():
        return None
    store = open_store([bundle])
    return [f.code for f in run_detectors(store).findings]


def _assert_duplicate_publish(bundle: Path) -> None:
    store = open_store([bundle])
    rows = store.rows(
        "select tool, input_hash, idempotency_key, status, seq_start from tool_calls "
        "where side_effect order by seq_start")
    assert [(r["tool"], r["idempotency_key"], r["status"]) for r in rows] == [
        ("publish_report", "publish:battery-storage-2026", "ok"),
        ("publish_report", "publish:battery-storage-2026", "ok"),
    ]
    assert rows[0]["input_hash"] == rows[1]["input_hash"]
    events = _events(bundle)
    started = [e for e in events if e["type"] == "run.started"]
    resumed = [e for e in events if e["type"] == "run.resumed"]
    assert [e["data"]["worker_id"] for e in started + resumed] == ["worker-a", "worker-b"]
    evaluations = [e["data"] for e in events if e["type"] == "evaluation"]
    assert evaluations == [{"verdict": "pass", "checks": {"sources_found": True, "has_title": True}}] * 2
    # one publish by each worker: worker A's before the restart, worker B's after
    assert rows[0]["seq_start"] < resumed[0]["seq"] < rows[1]["seq_start"]
    # worker B resumed from the writer's checkpoint: the one worker A announced last
    saved = [e["data"] for e in events if e["type"] == "checkpoint.saved"]
    before = [d for d, e in zip(saved, [e for e in events if e["type"] == "checkpoint.saved"], strict=True)
              if e["seq"] < resumed[0]["seq"]]
    assert [d["step"] for d in before] == [-1, 0, 1, 2, 3]
    assert resumed[0]["data"]["from_checkpoint"] == before[-1]["checkpoint_id"]
    assert [d["step"] for d in saved] == [-1, 0, 1, 2, 3, 4]
    ckpts = [json.loads(x) for x in (bundle / "checkpoints.jsonl").read_text().splitlines()]
    assert [c["step"] for c in ckpts] == [-1, 0, 1, 2, 3, 4]
    last_state = json.loads((bundle / "last_state.json").read_text())
    assert last_state["verdict"] == "approved" and last_state["published"] == ["post-2"]
    codes = _finding_codes(bundle, "duplicate_side_effect")
    if codes is not None:
        assert codes == ["duplicate_side_effect"]


def test_research_agent_duplicate_publish_sqlite(telemetry: Telemetry, tmp_path: Path) -> None:
    import langgraph_research_agent as ex

    ws = tmp_path / "ws"
    run = ex.run_scenario(ws, "duplicate-publish", "sqlite")
    assert run.status == "succeeded"
    assert run.bundle_path == ws / "_debug"
    posts = json.loads((ws / "cms" / "posts.json").read_text())
    assert [p["id"] for p in posts] == ["post-1", "post-2"]
    assert {p["slug"] for p in posts} == {"battery-storage-2026"}
    _assert_duplicate_publish(run.bundle_path)


def test_research_agent_duplicate_publish_postgres(telemetry: Telemetry, tmp_path: Path) -> None:
    import langgraph_research_agent as ex

    if pg_bindir() is None:
        pytest.fail("PostgreSQL is not installed: run scripts/install-postgres.sh")
    with postgres_server() as url:
        run = ex.run_scenario(tmp_path / "ws", "duplicate-publish", "postgres", url)
        assert run.bundle_path is not None
        _assert_duplicate_publish(run.bundle_path)


def test_research_agent_ok_publishes_once(telemetry: Telemetry, tmp_path: Path) -> None:
    import langgraph_research_agent as ex

    run = ex.run_scenario(tmp_path / "ws", "ok", "sqlite")
    assert run.status == "succeeded" and run.bundle_path is None
    posts = json.loads((tmp_path / "ws" / "cms" / "posts.json").read_text())
    assert [p["id"] for p in posts] == ["post-1"]
    names = sorted({s.name for s in telemetry.finished()})
    assert names == ["chat gpt-4o", "execute_tool publish_report", "execute_tool search",
                     "invoke_workflow research", "invoke_workflow research_graph", "planner",
                     "researcher", "superstep 1", "superstep 2", "superstep 3", "superstep 4",
                     "verifier", "writer"]


def test_triage_rate_limit_scenario(telemetry: Telemetry, tmp_path: Path) -> None:
    import openai_agents_triage as ex

    run, answer = asyncio.run(ex.run_scenario(tmp_path / "ws", "rate-limit"))
    assert answer is None
    assert run.status == "failed"
    assert run.failure is not None and run.failure["type"] == "rate_limited"
    assert run.bundle_path is not None
    events = _events(run.bundle_path)
    limited = [e["data"] for e in events if e["type"] == "rate_limited"]
    assert limited == [{"endpoint": "/v1/chat/completions", "retry_after_s": 0.02,
                        "provider": "openai", "status": 429}] * 5
    types = [e["type"] for e in events]
    assert types == [
        "run.started",
        "model.call", "agent.handoff",  # triage hands off
        "rate_limited", "rate_limited", "model.call",  # two 429s, the client's retry gets through
        "tool.started", "tool.finished",  # lookup_invoice
        "rate_limited", "rate_limited", "rate_limited", "model.call",  # retries exhausted
        "error", "run.finished",
    ]
    handoff = next(e for e in events if e["type"] == "agent.handoff")
    assert handoff["data"] == {"from_agent": "triage_agent", "to_agent": "billing_agent"}
    calls = [e["data"] for e in events if e["type"] == "model.call"]
    assert [c.get("input_tokens") for c in calls] == [380, 460, None]
    assert calls[-1]["error"] == "Error getting response"
    store = open_store([run.bundle_path])
    assert store.sql("select count(*) from events where type = 'rate_limited'") == [(5,)]
    codes = _finding_codes(run.bundle_path, "rate_limit")
    if codes is not None:
        assert codes == ["rate_limit"]


def test_triage_ok_scenario_spans(telemetry: Telemetry, tmp_path: Path) -> None:
    import openai_agents_triage as ex

    run, answer = asyncio.run(ex.run_scenario(tmp_path / "ws", "ok"))
    assert run.status == "succeeded" and run.bundle_path is None
    assert answer == "I refunded the duplicate charge of $42.00 on INV-1001."
    assert ex.REFUNDS == [{"invoice_id": "INV-1001", "amount": 42.0}]
    spans = telemetry.finished()
    by_id = {s.context.span_id: s for s in spans}

    def parent(name: str) -> str | None:
        s = telemetry.span(name)
        return by_id[s.parent.span_id].name if s.parent and s.parent.span_id in by_id else None

    # run → SDK trace → task → agent → turn → generation / tool / handoff
    assert parent("invoke_workflow billing_triage") == "invoke_agent support-triage"
    assert parent("task billing_triage") == "invoke_workflow billing_triage"
    assert parent("invoke_agent triage_agent") == "task billing_triage"
    assert parent("invoke_agent billing_agent") == "task billing_triage"
    assert parent("handoff triage_agent -> billing_agent") == "turn triage_agent"
    assert parent("execute_tool refund_invoice") == "turn billing_agent"
    assert [s.name for s in spans].count("turn billing_agent") == 3
    refund = telemetry.span("execute_tool refund_invoice")
    assert refund.attributes["agenttrail.tool.side_effect"] is True
    assert refund.attributes["agenttrail.tool.idempotency_key"] == "refund_invoice:INV-1001"
    assert refund.attributes["gen_ai.tool.name"] == "refund_invoice"
    chats = [s for s in spans if s.name == "chat gpt-4o-mini"]
    assert len(chats) == 4
    assert [s.attributes["gen_ai.usage.input_tokens"] for s in chats] == [380, 460, 540, 620]
    assert {s.attributes["gen_ai.conversation.id"] for s in chats} == {"ticket-ok"}
