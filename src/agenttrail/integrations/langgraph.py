"""LangGraph integration: node spans, super-step spans, checkpoints and approval gates.

Three ways in, from least to most code to touch::

    from agenttrail.integrations.langgraph import instrument, node, write_checkpoints

    graph = instrument(builder.compile(checkpointer=saver))   # every node, no node edited
    @node()                                                   # or: decorate single node functions
    def researcher(state: State) -> dict: ...
    write_checkpoints(saver, "thread-1", Path("_debug"))      # checkpoint history into a bundle

Inside ``agenttrail.run(...)`` the thread id of the RunnableConfig becomes the conversation id
(``gen_ai.conversation.id``); each super-step and each node is a span; ``interrupt()`` gates become
``approval.requested`` events and ``Command(resume=...)`` an ``approval.decided`` event; checkpoints
the graph saves are announced as ``checkpoint.saved`` events and their history (with pending writes)
lands in the bundle's ``checkpoints.jsonl`` and ``last_state.json``.

Needs the ``agenttrail[langgraph]`` extra. Telemetry never raises into the graph.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .. import names
from ..instrument._content import safe_content, truncate
from ..instrument._run import Run, current_run
from ..instrument._runtime import internal_error, state
from ._common import (
    EV_APPROVAL_DECIDED,
    EV_APPROVAL_REQUESTED,
    KIND_GRAPH,
    KIND_SUPERSTEP,
    LANGGRAPH_CHECKPOINT_NS,
    LANGGRAPH_STEP,
    Scrubbed,
    dumps,
    jsonable,
)

__all__ = [
    "AgenttrailCallbackHandler",
    "awrite_checkpoints",
    "checkpoint_records",
    "instrument",
    "node",
    "write_checkpoints",
]

F = TypeVar("F", bound=Callable[..., Any])
G = TypeVar("G")

CHECKPOINTS_FILE = "checkpoints.jsonl"
LAST_STATE_FILE = "last_state.json"
_INTERRUPT_CHANNEL = "__interrupt__"

# span ids of node spans the callback handler has open: @node inside an instrumented graph does not
# open a second span for the same node.
_handler_node_spans: set[int] = set()
_handler_lock = threading.Lock()


def _tracer() -> trace.Tracer:
    return state().tracer


def _is_interrupt(exc: BaseException | None) -> bool:
    if exc is None:
        return False
    from langgraph.errors import GraphInterrupt

    return isinstance(exc, GraphInterrupt)


def _interrupts_of(exc: BaseException) -> list[Any]:
    args = exc.args[0] if exc.args else ()
    return list(args) if isinstance(args, Sequence) and not isinstance(args, str) else []


def _content_allowed() -> bool:
    return state().capture.any


def _request_data(value: Any) -> dict[str, Any]:
    """What an approval request asked, as far as content capture allows."""
    if _content_allowed():
        return {"request": safe_content(jsonable(value))}
    basis = dumps(jsonable(value))
    return {"request_hash": hashlib.sha256(basis.encode()).hexdigest()[:16]}


def _decision_of(value: Any) -> str:
    """A short, readable decision out of a resume value (``"approve"``, ``"reject"`` ...)."""
    if isinstance(value, Mapping):
        for key in ("decision", "action", "approved", "type", "verdict"):
            if key in value:
                return _decision_of(value[key])
        return "resumed"
    if isinstance(value, bool):
        return "approve" if value else "reject"
    if isinstance(value, str | int | float):
        return truncate(safe_content(str(value)), 80)
    return "resumed"


# ---------------------------------------------------------------------------------------------
# node spans (shared by the callback handler and @node)


class _NodeSpan:
    """One node execution: span, ``node.started``/``node.finished`` and approval events."""

    __slots__ = ("name", "previous", "run", "span", "step", "t0", "thread_id", "token")

    def __init__(self, name: str, *, step: int | None, thread_id: str | None, run: Run | None,
                 parent: Span | None, checkpoint_ns: str | None = None) -> None:
        self.name = name
        self.step = step
        self.thread_id = thread_id
        self.run = run
        attrs: dict[str, Any] = {names.NODE_NAME: name, names.SPAN_KIND: "node"}
        if step is not None:
            attrs[LANGGRAPH_STEP] = step
        if thread_id:
            attrs[names.CONVERSATION_ID] = thread_id
        if checkpoint_ns:
            attrs[LANGGRAPH_CHECKPOINT_NS] = checkpoint_ns.split(":", 1)[0]
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        self.span = _tracer().start_span(name, context=ctx, kind=SpanKind.INTERNAL, attributes=attrs)
        self.previous = otel_context.get_current()
        self.token: object | None = otel_context.attach(trace.set_span_in_context(self.span))
        self.t0 = time.perf_counter()
        if run is not None:
            run.event(names.EV_NODE_STARTED, actor="harness", span=self.span,
                      data={"node": name, "step": step, "thread_id": thread_id})

    def finish(self, result: Any, exc: BaseException | None, end_ns: int | None = None) -> None:
        seconds = time.perf_counter() - self.t0
        interrupted = _is_interrupt(exc)
        if exc is not None and not interrupted:
            from opentelemetry.util.genai.utils import fq_exception_type

            self.span.set_attribute(names.ERROR_TYPE, fq_exception_type(exc))
            self.span.set_status(Status(StatusCode.ERROR, truncate(safe_content(str(exc)), 1024)))
        if interrupted and exc is not None:
            self.span.add_event("langgraph.interrupt", {"count": len(_interrupts_of(exc))})
        if self.token is not None:
            _restore(self.token, self.span, self.previous)
            self.token = None
        self.span.end(end_time=end_ns)
        run = self.run
        if run is None:
            return
        if interrupted and exc is not None:
            for intr in _interrupts_of(exc):
                run.event(EV_APPROVAL_REQUESTED, actor="harness", span=self.span, data={
                    "operation_id": getattr(intr, "id", None), "node": self.name,
                    "step": self.step, "thread_id": self.thread_id,
                    **_request_data(getattr(intr, "value", None))})
        status = "interrupted" if interrupted else ("error" if exc is not None else "ok")
        updates = sorted(str(k) for k in result) if isinstance(result, Mapping) else None
        run.event(names.EV_NODE_FINISHED, actor="harness", span=self.span, data={
            "node": self.name, "step": self.step, "status": status,
            "duration_ms": round(seconds * 1000, 3), "updates": updates,
            "error": type(exc).__name__ if exc is not None and not interrupted else None})


def _restore(token: object, span: Span, previous: otel_context.Context) -> None:
    """Undo ``attach``. Callback managers may end a run in a copy of the context it started in,
    where the token cannot be reset: then, if our span is still current there, put back the
    context that was current before it (OpenTelemetry's ``detach`` would log an error instead)."""
    from opentelemetry.context import _RUNTIME_CONTEXT

    try:
        _RUNTIME_CONTEXT.detach(token)  # type: ignore[arg-type]
    except ValueError:
        if trace.get_current_span() is span:
            otel_context.attach(previous)


def _config_facts(config: Mapping[str, Any] | None) -> tuple[str | None, int | None, str | None, str | None]:
    """(thread id, step, node name, checkpoint ns) from a RunnableConfig."""
    if not config:
        return None, None, None, None
    conf = config.get("configurable") or {}
    meta = config.get("metadata") or {}
    thread = conf.get("thread_id", meta.get("thread_id"))
    step = meta.get("langgraph_step")
    return (str(thread) if thread is not None else None,
            step if isinstance(step, int) else None,
            meta.get("langgraph_node"), meta.get("langgraph_checkpoint_ns"))


def _adopt_thread(run: Run | None, thread_id: str | None) -> None:
    """The graph's thread id becomes the run's conversation id, unless one was given explicitly."""
    if run is not None and thread_id and run.conversation_id == run.run_id:
        run.conversation_id = thread_id


def node(name: str | None = None) -> Callable[[F], F]:
    """Decorate a LangGraph node function (sync or async; state in, partial state out).

    The node's span carries the graph's thread id (``gen_ai.conversation.id``) and super-step
    (``agenttrail.langgraph.step``), read from the RunnableConfig LangGraph sets for the node. An
    ``interrupt()`` inside the node is recorded as ``approval.requested`` (the node as
    ``interrupted``, not failed). Inside a graph wrapped with :func:`instrument` the decorator adds
    nothing (the graph's handler already opened the node's span).
    """

    def decorate(fn: F) -> F:
        default_name = name or getattr(fn, "__name__", "node")

        def start() -> _NodeSpan | None:
            try:
                current = trace.get_current_span().get_span_context()
                with _handler_lock:
                    if current.is_valid and current.span_id in _handler_node_spans:
                        return None
                try:
                    from langgraph.config import get_config

                    config: Mapping[str, Any] | None = get_config()
                except RuntimeError:
                    config = None
                thread, step, graph_node, ns = _config_facts(config)
                run = current_run()
                _adopt_thread(run, thread)
                return _NodeSpan(name or graph_node or default_name, step=step, thread_id=thread,
                                 run=run, parent=None, checkpoint_ns=ns)
            except Exception:  # noqa: BLE001
                internal_error("starting a LangGraph node span")
                return None

        def finish(call: _NodeSpan | None, result: Any, exc: BaseException | None) -> None:
            if call is None:
                return
            try:
                call.finish(result, exc)
            except Exception:  # noqa: BLE001
                internal_error("ending a LangGraph node span")

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_node(*args: Any, **kwargs: Any) -> Any:
                call = start()
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    finish(call, None, exc)
                    raise
                finish(call, result, None)
                return result

            return async_node  # type: ignore[return-value]

        @functools.wraps(fn)
        def sync_node(*args: Any, **kwargs: Any) -> Any:
            call = start()
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                finish(call, None, exc)
                raise
            finish(call, result, None)
            return result

        return sync_node  # type: ignore[return-value]

    return decorate


# ---------------------------------------------------------------------------------------------
# the callback handler: a whole compiled graph without touching its nodes


class _GraphRun:
    __slots__ = ("last_end_ns", "open_steps", "run", "span", "thread_id")

    def __init__(self, span: Span, thread_id: str | None, run: Run | None) -> None:
        self.span = span
        self.thread_id = thread_id
        self.run = run
        self.open_steps: dict[int, Span] = {}
        self.last_end_ns: dict[int, int] = {}

    def close_steps(self, below: int | None = None) -> None:
        for step in sorted(self.open_steps):
            if below is not None and step >= below:
                continue
            span = self.open_steps.pop(step)
            span.end(end_time=self.last_end_ns.pop(step, None))


class AgenttrailCallbackHandler(BaseCallbackHandler):
    """A LangChain callback handler that turns a LangGraph execution into agenttrail telemetry.

    Spans: ``invoke_workflow {graph}`` per invocation, ``superstep {n}`` per super-step, one span per
    node (named after it). Events (inside ``agenttrail.run``): ``node.started``/``node.finished``,
    ``approval.requested``/``approval.decided``, ``checkpoint.saved``. Give it the graph's
    checkpointer to get checkpoint events, the checkpoint history in the bundle and approval ids.
    """

    run_inline = True  # node spans must be opened in the context the node then runs in
    raise_error = False

    def __init__(self, checkpointer: Any = None, *, graph_name: str | None = None) -> None:
        self.checkpointer = checkpointer if _is_saver(checkpointer) else None
        self.graph_name = graph_name
        self._graphs: dict[UUID, _GraphRun] = {}
        self._nodes: dict[UUID, tuple[_NodeSpan, UUID, int | None]] = {}
        self._parents: dict[UUID, UUID] = {}  # node run -> its root graph run
        self._announced: dict[tuple[str, str], set[str]] = {}  # (run id, thread) -> checkpoint ids
        self._lock = threading.RLock()

    # -- chain callbacks -------------------------------------------------------------------------
    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, tags: list[str] | None = None,
                       metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        try:
            meta = metadata or {}
            chain_name = kwargs.get("name") or (serialized or {}).get("name")
            if parent_run_id is None:
                self._start_graph(run_id, chain_name, inputs, meta)
                return
            node_name = meta.get("langgraph_node")
            with self._lock:
                root = (parent_run_id if parent_run_id in self._graphs
                        else self._parents.get(parent_run_id))
                parent_is_graph_or_node = parent_run_id in self._graphs or parent_run_id in self._nodes
            if root is None or not parent_is_graph_or_node or not node_name or chain_name != node_name:
                return  # a runnable nested inside a node: not a node of its own
            self._start_node(run_id, parent_run_id, root, str(node_name), meta)
        except Exception:  # noqa: BLE001
            internal_error("recording a LangGraph chain start")

    def on_chain_end(self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                     **kwargs: Any) -> None:
        self._end(run_id, outputs, None)

    def on_chain_error(self, error: BaseException, *, run_id: UUID,
                       parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._end(run_id, None, error)

    # -- internals -------------------------------------------------------------------------------
    def _start_graph(self, run_id: UUID, chain_name: str | None, inputs: Any,
                     meta: Mapping[str, Any]) -> None:
        thread = meta.get("thread_id")
        thread_id = str(thread) if thread is not None else None
        run = current_run()
        _adopt_thread(run, thread_id)
        workflow = self.graph_name or chain_name or "LangGraph"
        attrs: dict[str, Any] = {names.OPERATION_NAME: names.OP_INVOKE_WORKFLOW,
                                 names.WORKFLOW_NAME: workflow, names.SPAN_KIND: KIND_GRAPH}
        if thread_id:
            attrs[names.CONVERSATION_ID] = thread_id
        span = _tracer().start_span(f"invoke_workflow {workflow}", kind=SpanKind.INTERNAL,
                                    attributes=attrs)
        with self._lock:
            self._graphs[run_id] = _GraphRun(span, thread_id, run)
        if run is not None and thread_id:
            self._sync_checkpoints(run, thread_id, span)
            resume = getattr(inputs, "resume", None)
            if resume is not None and type(inputs).__name__ == "Command":
                self._approval_decided(run, thread_id, resume, span)

    def _start_node(self, run_id: UUID, parent_run_id: UUID, root: UUID, node_name: str,
                    meta: Mapping[str, Any]) -> None:
        step = meta.get("langgraph_step")
        step = step if isinstance(step, int) else None
        new_step = False
        with self._lock:
            graph = self._graphs[root]
            parent_span: Span
            if parent_run_id in self._nodes:  # a subgraph's node: nest under the subgraph's node
                parent_span = self._nodes[parent_run_id][0].span
            elif step is not None:
                new_step = step not in graph.open_steps
                if new_step:
                    graph.close_steps(below=step)
                    attrs = {names.SPAN_KIND: KIND_SUPERSTEP, LANGGRAPH_STEP: step}
                    if graph.thread_id:
                        attrs[names.CONVERSATION_ID] = graph.thread_id
                    graph.open_steps[step] = _tracer().start_span(
                        f"superstep {step}", context=trace.set_span_in_context(graph.span),
                        kind=SpanKind.INTERNAL, attributes=attrs)
                parent_span = graph.open_steps[step]
            else:
                parent_span = graph.span
        if step is not None and parent_run_id == root and new_step and graph.run and graph.thread_id:
            # the previous super-step's checkpoint is saved before this one starts
            self._sync_checkpoints(graph.run, graph.thread_id, graph.span)
        ns = _NodeSpan(node_name, step=step, thread_id=graph.thread_id, run=graph.run,
                       parent=parent_span, checkpoint_ns=meta.get("langgraph_checkpoint_ns"))
        with self._lock:
            self._nodes[run_id] = (ns, root, step)
            self._parents[run_id] = root
            _handler_node_spans.add(ns.span.get_span_context().span_id)

    def _end(self, run_id: UUID, outputs: Any, error: BaseException | None) -> None:
        try:
            with self._lock:
                node_entry = self._nodes.pop(run_id, None)
                self._parents.pop(run_id, None)
                graph = self._graphs.pop(run_id, None) if node_entry is None else None
            if node_entry is not None:
                ns, root, step = node_entry
                with _handler_lock:
                    _handler_node_spans.discard(ns.span.get_span_context().span_id)
                end_ns = time.time_ns()
                ns.finish(outputs, error, end_ns)
                with self._lock:
                    g = self._graphs.get(root)
                    if g is not None and step is not None:
                        g.last_end_ns[step] = max(end_ns, g.last_end_ns.get(step, 0))
                return
            if graph is None:
                return
            graph.close_steps()
            if error is not None and not _is_interrupt(error):
                from opentelemetry.util.genai.utils import fq_exception_type

                graph.span.set_attribute(names.ERROR_TYPE, fq_exception_type(error))
                graph.span.set_status(Status(StatusCode.ERROR, truncate(safe_content(str(error)), 1024)))
            if graph.run is not None and graph.thread_id:
                self._sync_checkpoints(graph.run, graph.thread_id, graph.span)
                if self.checkpointer is not None:
                    write_checkpoints(self.checkpointer, graph.thread_id, graph.run.spool_dir)
            graph.span.end()
        except Exception:  # noqa: BLE001
            internal_error("recording a LangGraph chain end")

    def _sync_checkpoints(self, run: Run, thread_id: str, span: Span) -> None:
        """Announce checkpoints saved since the last look (also those a killed worker saved)."""
        saver = self.checkpointer
        if saver is None:
            return
        key = (run.run_id, thread_id)
        with self._lock:
            announced = self._announced.get(key)
            if announced is None:
                announced = self._announced[key] = _spooled_checkpoint_ids(run.spool_dir)
        fresh: list[Any] = []
        try:
            for tup in saver.list(_thread_config(thread_id)):
                cid = tup.config["configurable"]["checkpoint_id"]
                if cid in announced:
                    break
                fresh.append(tup)
        except NotImplementedError:
            return  # an async-only saver: use awrite_checkpoints after the run
        scrubbed = Scrubbed()
        lines: list[str] = []
        for tup in reversed(fresh):  # oldest first
            record = _record(tup, thread_id, scrubbed, with_writes=False)
            announced.add(record["checkpoint_id"])
            lines.append(dumps(record))
            run.event(names.EV_CHECKPOINT_SAVED, actor="harness", span=span, data={
                "checkpoint_id": record["checkpoint_id"], "step": record["step"],
                "parent_checkpoint_id": record["parent_checkpoint_id"], "saved_at": record["ts"],
                "thread_id": thread_id, "source": record["metadata"].get("source")})
        if lines:
            run.spool_dir.mkdir(parents=True, exist_ok=True)
            with open(run.spool_dir / CHECKPOINTS_FILE, "a", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")

    def _approval_decided(self, run: Run, thread_id: str, resume: Any, span: Span) -> None:
        pending: list[str] = []
        if self.checkpointer is not None:
            tup = self.checkpointer.get_tuple(_thread_config(thread_id))
            for _task, channel, value in (getattr(tup, "pending_writes", None) or []):
                if channel == _INTERRUPT_CHANNEL:
                    pending.extend(getattr(i, "id", None) or "" for i in (value or []))
        if isinstance(resume, Mapping) and pending and set(resume) <= set(pending):
            decisions = [(str(k), _decision_of(v)) for k, v in resume.items()]
        else:
            decisions = [(op, _decision_of(resume)) for op in (pending or [None])]
        for op_id, decision in decisions:
            run.event(EV_APPROVAL_DECIDED, actor="human", span=span, data={
                "operation_id": op_id, "decision": decision, "thread_id": thread_id})


def _is_saver(value: Any) -> bool:
    """A checkpointer the (synchronous) handler may call: async savers deadlock on sync calls."""
    return (value is not None and not isinstance(value, bool) and hasattr(value, "list")
            and not type(value).__name__.startswith("Async"))


def instrument(graph: G, *, checkpointer: Any = None, name: str | None = None) -> G:
    """Return ``graph`` (a compiled LangGraph) with agenttrail's callback handler bound to it.

    The original graph is left as it was. ``checkpointer`` defaults to the graph's own.
    """
    saver = checkpointer if checkpointer is not None else getattr(graph, "checkpointer", None)
    handler = AgenttrailCallbackHandler(saver, graph_name=name or getattr(graph, "name", None))
    return graph.with_config({"callbacks": [handler]})  # type: ignore[attr-defined,no-any-return]


# ---------------------------------------------------------------------------------------------
# checkpoint history → bundle files


def _thread_config(thread_id: str, checkpoint_ns: str = "") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}}


def _state_values(channel_values: Mapping[str, Any]) -> dict[str, Any]:
    """The state channels only (LangGraph's ``branch:to:x`` / ``__start__`` are plumbing)."""
    return {k: v for k, v in channel_values.items() if not k.startswith("__") and ":" not in k}


def _record(tup: Any, thread_id: str, scrubbed: Scrubbed, *, with_writes: bool = True) -> dict[str, Any]:
    cfg = tup.config.get("configurable", {})
    parent = (tup.parent_config or {}).get("configurable", {}) if tup.parent_config else {}
    ckpt = tup.checkpoint
    meta = dict(tup.metadata or {})
    channel_values = ckpt.get("channel_values") or {}
    writes = []
    if with_writes:
        for task_id, channel, value in tup.pending_writes or []:
            writes.append({"task_id": str(task_id), "channel": channel,
                           "value": jsonable(value, scrubbed)})
    return {
        "checkpoint_id": cfg.get("checkpoint_id") or ckpt.get("id"),
        "parent_checkpoint_id": parent.get("checkpoint_id"),
        "ts": ckpt.get("ts"),
        "thread_id": thread_id,
        "checkpoint_ns": cfg.get("checkpoint_ns", ""),
        "step": meta.get("step"),
        "values": jsonable(_state_values(channel_values), scrubbed),
        "next": sorted(k.split(":", 2)[2] for k in channel_values if k.startswith("branch:to:")),
        "metadata": jsonable(meta, scrubbed),
        "pending_writes": writes,
    }


def checkpoint_records(checkpointer: Any, thread_id: str, *, checkpoint_ns: str = "",
                       limit: int | None = None, scrubbed: Scrubbed | None = None
                       ) -> list[dict[str, Any]]:
    """The checkpoint history of one thread as bundle records, oldest first (secrets scrubbed)."""
    s = scrubbed or Scrubbed()
    tuples = checkpointer.list(_thread_config(thread_id, checkpoint_ns), limit=limit)
    return [_record(t, thread_id, s) for t in reversed(list(tuples))]


async def _alist(checkpointer: Any, thread_id: str, checkpoint_ns: str, limit: int | None) -> list[Any]:
    return [t async for t in checkpointer.alist(_thread_config(thread_id, checkpoint_ns), limit=limit)]


def write_checkpoints(checkpointer: Any, thread_id: str, bundle_dir: Path | str, *,
                      checkpoint_ns: str = "", limit: int | None = None) -> dict[str, Any]:
    """Write ``checkpoints.jsonl`` and ``last_state.json`` for one thread into ``bundle_dir``.

    ``checkpoints.jsonl`` holds the history from ``checkpointer.list(...)`` (oldest first) with each
    checkpoint's pending writes; ``last_state.json`` the state values of the latest checkpoint
    (what ``graph.get_state(config).values`` returns). Values are made JSON-safe (LangChain messages
    as dicts) and scrubbed of secrets. When ``bundle_dir`` is a sealed bundle its manifest's file
    index is updated. Works with any sync-capable saver (InMemorySaver, SqliteSaver, PostgresSaver);
    for async-only savers use :func:`awrite_checkpoints`.
    """
    scrubbed = Scrubbed()
    records = checkpoint_records(checkpointer, thread_id, checkpoint_ns=checkpoint_ns, limit=limit,
                                 scrubbed=scrubbed)
    return _write(records, thread_id, Path(bundle_dir), scrubbed)


async def awrite_checkpoints(checkpointer: Any, thread_id: str, bundle_dir: Path | str, *,
                             checkpoint_ns: str = "", limit: int | None = None) -> dict[str, Any]:
    """:func:`write_checkpoints` for async savers (AsyncSqliteSaver, AsyncPostgresSaver)."""
    scrubbed = Scrubbed()
    tuples = await _alist(checkpointer, thread_id, checkpoint_ns, limit)
    records = [_record(t, thread_id, scrubbed) for t in reversed(tuples)]
    return _write(records, thread_id, Path(bundle_dir), scrubbed)


def _write(records: list[dict[str, Any]], thread_id: str, bundle_dir: Path,
           scrubbed: Scrubbed) -> dict[str, Any]:
    bundle_dir.mkdir(parents=True, exist_ok=True)
    _atomic_write(bundle_dir / CHECKPOINTS_FILE, "".join(dumps(r) + "\n" for r in records))
    last = records[-1] if records else None
    files = [CHECKPOINTS_FILE]
    if last is not None:
        _atomic_write(bundle_dir / LAST_STATE_FILE, json.dumps(last["values"], indent=2, sort_keys=True,
                                                               ensure_ascii=False) + "\n")
        files.append(LAST_STATE_FILE)
    _update_manifest(bundle_dir, files)
    return {
        "thread_id": thread_id,
        "checkpoints": len(records),
        "pending_writes": sum(len(r["pending_writes"]) for r in records),
        "last_checkpoint_id": last["checkpoint_id"] if last else None,
        "last_step": last["step"] if last else None,
        "secrets_scrubbed": scrubbed.count,
        "files": files,
    }


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _update_manifest(bundle_dir: Path, files: Iterable[str]) -> None:
    """Keep a sealed bundle verifiable: record the new files' sizes and hashes."""
    manifest_path = bundle_dir / "manifest.json"
    if not manifest_path.exists():
        return
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    index = manifest.setdefault("files", {})
    for name in files:
        data = (bundle_dir / name).read_bytes()
        index[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    _atomic_write(manifest_path, json.dumps(manifest, indent=2) + "\n")


def _spooled_checkpoint_ids(spool_dir: Path) -> set[str]:
    path = spool_dir / CHECKPOINTS_FILE
    ids: set[str] = set()
    if path.exists():
        for raw in _lines(path):
            try:
                ids.add(str(json.loads(raw)["checkpoint_id"]))
            except (ValueError, KeyError, TypeError):
                continue
    return ids


def _lines(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as fh:
        yield from fh
