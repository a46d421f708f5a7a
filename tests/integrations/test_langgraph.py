"""The LangGraph integration against real LangGraph: checkpoint savers (memory, SQLite, a real
PostgreSQL server), the callback handler, @node, interrupts and resumes."""

from __future__ import annotations

import asyncio
import itertools
import json
import operator
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

import agenttrail as at
from agenttrail.bundle.verify import verify
from agenttrail.integrations.langgraph import instrument, node, write_checkpoints
from tests.conftest import Telemetry
from tests.integrations.pgserver import pg_bindir, postgres_server

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"


class State(TypedDict):
    items: Annotated[list[str], operator.add]
    messages: Annotated[list[Any], operator.add]


def _plan(state: State) -> dict[str, Any]:
    return {"items": ["plan"], "messages": [HumanMessage(f"use key {SECRET}")]}


def _draft(state: State) -> dict[str, Any]:
    return {"items": ["draft"], "messages": [AIMessage("drafted")]}


def _gate(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "publish?"})
    return {"items": [f"gate:{answer}"]}


def _builder(draft: Any = _draft) -> StateGraph[State]:
    g = StateGraph(State)
    g.add_node("plan", _plan)
    g.add_node("draft", draft)
    g.add_node("gate", _gate)
    g.add_edge(START, "plan")
    g.add_edge("plan", "draft")
    g.add_edge("draft", "gate")
    g.add_edge("gate", END)
    return g


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    if pg_bindir() is None:
        pytest.fail("PostgreSQL is not installed: run scripts/install-postgres.sh")
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(tmp_path / "ckpt.sqlite", check_same_thread=False)
        yield SqliteSaver(conn)
        conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        url = request.getfixturevalue("pg_url")
        with PostgresSaver.from_conn_string(url) as s:
            s.setup()
            yield s
            with s.conn.cursor() as cur:  # each test starts from empty tables
                cur.execute("TRUNCATE checkpoints, checkpoint_blobs, checkpoint_writes")


def test_write_checkpoints_history_pending_writes_and_last_state(saver: Any, tmp_path: Path) -> None:
    graph = _builder().compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "thread-7"}}
    graph.invoke({"items": [], "messages": []}, cfg)  # stops at the gate's interrupt

    summary = write_checkpoints(saver, "thread-7", tmp_path / "bundle")

    lines = (tmp_path / "bundle" / "checkpoints.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    assert [r["step"] for r in records] == [-1, 0, 1, 2]
    assert [r["metadata"]["source"] for r in records] == ["input", "loop", "loop", "loop"]
    assert records[0]["parent_checkpoint_id"] is None
    for prev, cur in itertools.pairwise(records):
        assert cur["parent_checkpoint_id"] == prev["checkpoint_id"]
    assert {r["thread_id"] for r in records} == {"thread-7"}
    assert [r["next"] for r in records] == [[], ["plan"], ["draft"], ["gate"]]
    # the last checkpoint holds the interrupt as a pending write of the gate's task
    last = records[-1]
    assert [w["channel"] for w in last["pending_writes"]] == ["__interrupt__"]
    intr = last["pending_writes"][0]["value"][0]
    assert intr["value"] == {"question": "publish?"}
    assert intr["_type"] == "Interrupt"
    # LangChain messages as dicts, the secret scrubbed everywhere
    msgs = last["values"]["messages"]
    assert [(m["type"], m["content"]) for m in msgs] == [
        ("human", "use key [REDACTED:openai_key]"), ("ai", "drafted")]
    assert SECRET not in (tmp_path / "bundle" / "checkpoints.jsonl").read_text()
    assert last["values"]["items"] == ["plan", "draft"]

    state = json.loads((tmp_path / "bundle" / "last_state.json").read_text())
    assert state == last["values"]
    assert state["items"] == graph.get_state(cfg).values["items"]

    assert summary == {
        "thread_id": "thread-7", "checkpoints": 4,
        "pending_writes": sum(len(r["pending_writes"]) for r in records),
        "last_checkpoint_id": last["checkpoint_id"], "last_step": 2,
        # the secret sits in the plan's pending write and in the two checkpoints after it
        "secrets_scrubbed": 3,
        "files": ["checkpoints.jsonl", "last_state.json"],
    }
    assert summary["last_checkpoint_id"] == graph.get_state(cfg).config["configurable"]["checkpoint_id"]


def test_write_checkpoints_unknown_thread_writes_empty_history(tmp_path: Path) -> None:
    summary = write_checkpoints(InMemorySaver(), "nobody", tmp_path)
    assert (tmp_path / "checkpoints.jsonl").read_text() == ""
    assert not (tmp_path / "last_state.json").exists()
    assert summary["checkpoints"] == 0 and summary["last_checkpoint_id"] is None


def _events(bundle: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (bundle / "events.jsonl").read_text().splitlines()]


def _parent_names(telemetry: Telemetry) -> dict[str, list[str | None]]:
    spans = telemetry.finished()
    by_id = {s.context.span_id: s.name for s in spans}
    out: dict[str, list[str | None]] = {}
    for s in spans:
        out.setdefault(s.name, []).append(by_id.get(s.parent.span_id) if s.parent else None)
    return out


def test_instrumented_graph_spans_events_approval_and_bundle(telemetry: Telemetry, tmp_path: Path) -> None:
    saver = InMemorySaver()

    @at.tool(side_effect=True, idempotency_key=lambda slug: f"publish:{slug}")
    def publish(slug: str) -> str:
        return f"posted {slug}"

    def draft_and_publish(state: State) -> dict[str, Any]:
        publish("q3-report")
        return {"items": ["draft"]}

    graph = instrument(_builder(draft_and_publish).compile(checkpointer=saver, name="research"))
    cfg = {"configurable": {"thread_id": "t-42"}}
    with at.run("lg-1", "researcher", workspace=tmp_path, seal_on_success=True) as r:
        first = graph.invoke({"items": [], "messages": []}, cfg)
        assert [i.value for i in first["__interrupt__"]] == [{"question": "publish?"}]
        final = graph.invoke(Command(resume={"decision": "approve"}), cfg)
    assert final["items"] == ["plan", "draft", "gate:{'decision': 'approve'}"]
    assert r.conversation_id == "t-42"

    parents = _parent_names(telemetry)
    assert parents["invoke_workflow research"] == ["invoke_agent researcher"] * 2
    assert parents["superstep 1"] == ["invoke_workflow research"]
    assert parents["plan"] == ["superstep 1"]
    assert parents["draft"] == ["superstep 2"]
    assert parents["gate"] == ["superstep 3", "superstep 3"]  # interrupted, then resumed
    assert parents["execute_tool publish"] == ["draft"]
    gate = [s for s in telemetry.finished() if s.name == "gate"]
    assert [s.status.status_code.name for s in gate] == ["UNSET", "UNSET"]
    for s in telemetry.finished():
        if s.name != "invoke_agent researcher":
            assert s.attributes["gen_ai.conversation.id"] == "t-42", s.name
    assert telemetry.span("plan").attributes["agenttrail.langgraph.step"] == 1

    events = _events(r.bundle_path)
    # checkpoints are saved in the background (durability="async"): they are announced when the
    # next super-step starts or the invocation ends, so only their order is fixed
    types = [e["type"] for e in events if e["type"] != "checkpoint.saved"]
    assert types == [
        "run.started",
        "node.started", "node.finished",  # plan
        "node.started", "tool.started", "tool.finished", "node.finished",  # draft publishes
        "node.started", "approval.requested", "node.finished",  # gate interrupts
        "approval.decided",
        "node.started", "node.finished",
        "run.finished",
    ]
    by_type = {e["type"]: e for e in events}
    requested, decided = by_type["approval.requested"], by_type["approval.decided"]
    assert requested["data"]["operation_id"] == decided["data"]["operation_id"]
    assert len(requested["data"]["operation_id"]) == 32
    assert decided["data"]["decision"] == "approve"
    assert requested["data"]["node"] == "gate" and requested["data"]["step"] == 3
    assert "request" not in requested["data"]  # content capture is off: only a hash
    assert len(requested["data"]["request_hash"]) == 16
    gate_finished = [e for e in events if e["type"] == "node.finished" and e["data"]["node"] == "gate"]
    assert [e["data"]["status"] for e in gate_finished] == ["interrupted", "ok"]
    steps = [e["data"]["step"] for e in events if e["type"] == "checkpoint.saved"]
    assert steps == [-1, 0, 1, 2, 3]

    ckpts = [json.loads(x) for x in (r.bundle_path / "checkpoints.jsonl").read_text().splitlines()]
    assert [c["step"] for c in ckpts] == [-1, 0, 1, 2, 3]
    assert json.loads((r.bundle_path / "last_state.json").read_text())["items"][-1].startswith("gate:")


def test_async_graph_parallel_nodes_nest_tool_spans(telemetry: Telemetry, tmp_path: Path) -> None:
    class S(TypedDict):
        items: Annotated[list[str], operator.add]

    @at.tool
    async def fetch(source: str) -> str:
        await asyncio.sleep(0)
        return source

    async def left(state: S) -> dict[str, Any]:
        return {"items": [await fetch("left")]}

    async def right(state: S) -> dict[str, Any]:
        return {"items": [await fetch("right")]}

    g = StateGraph(S)
    g.add_node("left", left)
    g.add_node("right", right)
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    g.add_edge(["left", "right"], END)
    graph = instrument(g.compile(checkpointer=InMemorySaver(), name="fanout"))

    async def main() -> dict[str, Any]:
        async with at.run("lg-async", "fan", workspace=tmp_path):
            return await graph.ainvoke({"items": []}, {"configurable": {"thread_id": "a-1"}})

    assert sorted(asyncio.run(main())["items"]) == ["left", "right"]
    spans = telemetry.finished()
    by_id = {s.context.span_id: s for s in spans}
    tools = [s for s in spans if s.name == "execute_tool fetch"]
    assert sorted(by_id[t.parent.span_id].name for t in tools if t.parent) == ["left", "right"]
    for name in ("left", "right"):
        parent = by_id[telemetry.span(name).parent.span_id]  # type: ignore[union-attr]
        assert parent.name == "superstep 1"
    assert len([s for s in spans if s.name == "superstep 1"]) == 1


def test_node_decorator_without_handler_reads_thread_and_step(telemetry: Telemetry, tmp_path: Path) -> None:
    class S(TypedDict):
        n: int

    @node()
    def bump(state: S) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    @node("finish")
    async def done(state: S) -> dict[str, Any]:
        return {"n": state["n"] * 10}

    g = StateGraph(S)
    g.add_node("bump", bump)
    g.add_node("done", done)
    g.add_edge(START, "bump")
    g.add_edge("bump", "done")
    g.add_edge("done", END)
    plain = g.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "deco-1"}}
    with at.run("lg-deco", "deco", workspace=tmp_path, seal_on_success=True) as r:
        assert asyncio.run(plain.ainvoke({"n": 1}, cfg)) == {"n": 20}
    bump_span, finish_span = telemetry.span("bump"), telemetry.span("finish")
    assert bump_span.attributes["agenttrail.langgraph.step"] == 1
    assert finish_span.attributes["agenttrail.langgraph.step"] == 2
    assert finish_span.attributes["gen_ai.conversation.id"] == "deco-1"
    node_events = [(e["type"], e["data"]["node"]) for e in _events(r.bundle_path)
                   if e["type"].startswith("node.")]
    assert node_events == [("node.started", "bump"), ("node.finished", "bump"),
                           ("node.started", "finish"), ("node.finished", "finish")]

    # inside an instrumented graph the decorator adds no second span
    telemetry.spans.clear()
    asyncio.run(instrument(plain).ainvoke({"n": 2}, {"configurable": {"thread_id": "deco-2"}}))
    names = sorted(s.name for s in telemetry.finished())
    assert names == ["bump", "done", "invoke_workflow LangGraph", "superstep 1", "superstep 2"]


def test_write_checkpoints_into_sealed_bundle_keeps_it_verifiable(tmp_path: Path) -> None:
    saver = InMemorySaver()
    graph = _builder().compile(checkpointer=saver)
    graph.invoke({"items": [], "messages": []}, {"configurable": {"thread_id": "s-1"}})
    with at.run("lg-seal", "sealer", workspace=tmp_path) as r:
        r.fail("gate never answered", type="approval_timeout")
    assert r.bundle_path is not None
    write_checkpoints(saver, "s-1", r.bundle_path)
    result = verify(r.bundle_path)
    assert result.ok, result.lines()
    manifest = json.loads((r.bundle_path / "manifest.json").read_text())
    assert manifest["files"]["checkpoints.jsonl"]["bytes"] == (r.bundle_path / "checkpoints.jsonl").stat().st_size
