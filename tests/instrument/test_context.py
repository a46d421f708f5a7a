"""Nesting and context propagation: generators, threads, asyncio tasks, asyncio.to_thread."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

import agenttrail as at
from tests.conftest import Telemetry


@at.tool
def lookup(key: str) -> str:
    return key.upper()


@at.node("expand")
def expand(keys: list[str]):
    for k in keys:
        yield lookup(k)  # a span created while the generator body runs


@at.node("aexpand")
async def aexpand(keys: list[str]):
    for k in keys:
        await asyncio.sleep(0)
        yield lookup(k)


def _parent_name(telemetry: Telemetry, span) -> str | None:
    if span.parent is None:
        return None
    by_id = {s.context.span_id: s.name for s in telemetry.finished()}
    return by_id.get(span.parent.span_id)


def test_function_kinds_are_kept() -> None:
    assert inspect.isgeneratorfunction(expand)
    assert inspect.isasyncgenfunction(aexpand)
    assert inspect.iscoroutinefunction(at.tool(asyncio.sleep))
    assert expand.__name__ == "expand" and expand.__wrapped__ is not None


def test_generator_children_nest_and_consumer_context_is_untouched(
        telemetry: Telemetry, tmp_path: Path) -> None:
    with at.run("c1", agent_name="a", workspace=tmp_path):
        outer = trace.get_current_span()
        seen = []
        for item in expand(["x", "y"]):
            assert trace.get_current_span() is outer  # the consumer never sees the node's span
            seen.append(item)
            lookup("between")  # created by the consumer: a sibling of the node, not its child
    assert seen == ["X", "Y"]
    tools = [s for s in telemetry.finished() if s.name == "execute_tool lookup"]
    assert [_parent_name(telemetry, s) for s in tools] == ["expand", "invoke_agent a", "expand",
                                                           "invoke_agent a"]
    assert _parent_name(telemetry, telemetry.span("expand")) == "invoke_agent a"


def test_async_generator_children_nest(telemetry: Telemetry, tmp_path: Path) -> None:
    async def main() -> list[str]:
        async with at.run("c2", agent_name="a", workspace=tmp_path):
            return [x async for x in aexpand(["p", "q"])]

    assert asyncio.run(main()) == ["P", "Q"]
    tools = [s for s in telemetry.finished() if s.name == "execute_tool lookup"]
    assert [_parent_name(telemetry, s) for s in tools] == ["aexpand", "aexpand"]


def test_generator_send_throw_and_early_close(telemetry: Telemetry) -> None:
    @at.tool
    def echo():
        received = []
        try:
            while True:
                value = yield len(received)
                received.append(value)
        except KeyError:
            yield "caught"
        return received

    gen = echo()
    assert next(gen) == 0
    assert gen.send("a") == 1
    assert gen.throw(KeyError("k")) == "caught"
    gen.close()  # the consumer stops early: not an error
    span = telemetry.span("execute_tool echo")
    assert span.status.status_code is StatusCode.UNSET

    @at.tool
    def failing():
        yield 1
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        list(failing())
    assert telemetry.span("execute_tool failing").attributes["error.type"] == "ValueError"


def test_threads_and_to_thread_carry_the_run_and_the_span(telemetry: Telemetry, tmp_path: Path) -> None:
    results: dict[str, str | None] = {}

    def in_thread(tag: str) -> None:
        run = at.current_run()
        results[tag] = run.run_id if run else None
        lookup(tag)

    async def main() -> None:
        async with at.run("c3", agent_name="a", workspace=tmp_path):
            await asyncio.to_thread(in_thread, "to_thread")
            await asyncio.gather(*(asyncio.create_task(_task(f"task{i}")) for i in range(3)))
            ctx = contextvars.copy_context()  # the documented way for a plain thread pool
            with ThreadPoolExecutor(2) as pool:
                pool.submit(ctx.run, in_thread, "pool").result()
            bare = threading.Thread(target=in_thread, args=("bare",))  # no context copied
            bare.start()
            bare.join()

    async def _task(tag: str) -> None:
        await asyncio.sleep(0)
        in_thread(tag)

    asyncio.run(main())
    assert results == {"to_thread": "c3", "task0": "c3", "task1": "c3", "task2": "c3", "pool": "c3",
                       "bare": None}
    tools = {s.attributes["agenttrail.tool.input_hash"]: s for s in telemetry.finished()
             if s.name == "execute_tool lookup"}
    assert len(tools) == 6
    parents = sorted(_parent_name(telemetry, s) or "-" for s in tools.values())
    assert parents == ["-"] + ["invoke_agent a"] * 5
    with_run = [s for s in tools.values() if "gen_ai.conversation.id" in s.attributes]
    assert len(with_run) == 5


def test_concurrent_threads_write_strictly_increasing_seq(telemetry: Telemetry, tmp_path: Path) -> None:
    def work(i: int) -> None:
        for j in range(25):
            lookup(f"{i}-{j}")

    with at.run("c4", agent_name="a", workspace=tmp_path) as r:
        ctx = contextvars.copy_context()
        threads = [threading.Thread(target=ctx.copy().run, args=(work, i)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    events = [json.loads(x) for x in (r.spool_dir / "events.jsonl").read_text().splitlines()]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, 4 * 25 * 2 + 3))
    assert r.tool_calls == 100
