"""``run(...)``: one agent run — its root span, its event log, its failure and its bundle."""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.genai.utils import fq_exception_type

from .. import names
from ._content import safe_content, scrub, to_json
from ._recorder import SPOOL_DIRNAME, Spool, current_run_var, last_seq
from ._runtime import RecorderOptions, RunFailed, internal_error, state

__all__ = ["Operation", "Run", "RunFailed", "current_run", "run"]

_current: contextvars.ContextVar[Run | None] = current_run_var


def current_run() -> Run | None:
    """The run whose ``with`` block the caller is in (follows asyncio tasks and to_thread)."""
    return _current.get()


def now_rfc3339() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def default_worker_id() -> str:
    """``$AGENTTRAIL_WORKER_ID``, else ``host:pid``."""
    return os.environ.get("AGENTTRAIL_WORKER_ID") or f"{socket.gethostname()}:{os.getpid()}"


def _git_head(workspace: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(workspace), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


class Operation:
    """A side effect bracketed by ``operation.intent`` and ``operation.outcome`` events."""

    def __init__(self, run: Run, operation_id: str, kind: str, target: str) -> None:
        self.run = run
        self.operation_id = operation_id
        self.kind = kind
        self.target = target
        self.external_id: str | None = None
        self.status = "unknown"

    def succeeded(self, external_id: str | None = None) -> None:
        """The side effect happened (``external_id``: what the target calls it, e.g. a PR number)."""
        self.status = "succeeded"
        self.external_id = external_id

    def failed(self) -> None:
        """The side effect did not happen (without raising)."""
        self.status = "failed"

    def unknown(self) -> None:
        """It cannot be told whether the side effect happened (e.g. a timeout after sending)."""
        self.status = "unknown_reported"


_BUDGET_MODES = ("record", "fail", "raise")


class Run:
    """A live run. Use as ``with agenttrail.run(...) as r:`` (or ``async with``)."""

    def __init__(
        self,
        run_id: str,
        agent_name: str,
        *,
        workflow_name: str | None = None,
        budget: Mapping[str, Any] | None = None,
        workspace: str | os.PathLike[str] | None = None,
        resume: bool = False,
        seal_on_success: bool = False,
        conversation_id: str | None = None,
        bundle_options: Mapping[str, Any] | None = None,
        on_budget: str = "record",
        worker_id: str | None = None,
        write_paths: Sequence[str] | None = None,
    ) -> None:
        if on_budget not in _BUDGET_MODES:
            raise ValueError(f"on_budget must be one of {_BUDGET_MODES}, not {on_budget!r}")
        self.run_id = run_id
        self.agent_name = agent_name
        self.workflow_name = workflow_name
        self.budget = dict(budget or {})
        self.workspace = Path(workspace or os.getcwd()).resolve()
        self.resume = resume
        self.seal_on_success = seal_on_success
        self.on_budget = on_budget
        self.worker_id = worker_id or default_worker_id()
        # globs of the workspace paths the run means to change (judged by workspace_drift)
        self.write_paths = list(write_paths) if write_paths is not None else None
        self.resumed = False
        # stamped on every span started inside the run (RecorderProcessor.on_start); stamp_items:
        # the same as (key, str) pairs for its fast path, None when a value is not a str
        self.span_identity: dict[str, str] = {}
        self.stamp_items: tuple[tuple[str, str], ...] | None = None
        self.conversation_id = conversation_id or run_id
        self.bundle_options = dict(bundle_options or {})
        self.status = "running"
        self.failure: dict[str, str] | None = None
        self.bundle_path: Path | None = None
        self.tokens_used = 0
        self.tool_calls = 0
        self.inference_calls = 0
        self._span: Span | None = None
        self._token: contextvars.Token[Run | None] | None = None
        self._ctx_token: object | None = None
        self._spool: Spool | None = None
        self._options: RecorderOptions = RecorderOptions()
        self._seq = 0  # used only when the recorder is off (the spool numbers events otherwise)
        self._budget_hit: set[str] = set()
        self._last_tool: tuple[str, str] | None = None
        self._last_inference_failed = False
        self._start = 0.0
        self._lock = threading.Lock()
        self._finished = False

    @property
    def conversation_id(self) -> str:
        return self._conversation_id

    @conversation_id.setter
    def conversation_id(self, value: str) -> None:
        """Integrations set it from their framework (LangGraph thread id, Agents SDK group id)."""
        self._conversation_id = value
        identity = {names.CONVERSATION_ID: value, names.RUN_ID: self.run_id}
        self.span_identity = identity
        self.stamp_items = (tuple(identity.items())
                            if all(type(v) is str for v in identity.values()) else None)

    # -- paths ---------------------------------------------------------------------------------
    @property
    def spool_dir(self) -> Path:
        root = self._options.spool_dir or self.workspace / SPOOL_DIRNAME
        return root / _safe_name(self.run_id)

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Run:
        self._begin()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._end(ev)

    async def __aenter__(self) -> Run:
        self._begin()
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._end(ev)

    def _begin(self) -> None:
        self._start = time.perf_counter()
        self._token = _current.set(self)
        try:
            s = state()
            if self.workflow_name:
                op, span_name = names.OP_INVOKE_WORKFLOW, f"invoke_workflow {self.workflow_name}"
            else:
                op, span_name = names.OP_INVOKE_AGENT, f"invoke_agent {self.agent_name}"
            attrs: dict[str, Any] = {
                names.OPERATION_NAME: op,
                names.AGENT_NAME: self.agent_name,
                names.SPAN_KIND: "run",
            }
            if self.workflow_name:
                attrs[names.WORKFLOW_NAME] = self.workflow_name
            self._span = s.tracer.start_span(span_name, kind=SpanKind.INTERNAL, attributes=attrs)
            self._ctx_token = _attach_span(self._span)
            self._options = s.recorder_options
            self.resumed = (self._options.enabled and self.resume and self.spool_dir.exists()
                            and last_seq(self.spool_dir) > 0)
            if self._options.enabled:
                self._spool = Spool(self.spool_dir, max_file_bytes=self._options.max_file_bytes,
                                    max_files=self._options.max_files)
                s.recorder.attach(self.run_id, self._spool)
            if self.resumed:
                self._span.set_attribute(names.WORKER_ID, self.worker_id)
                self._record(names.EV_RUN_RESUMED, "system", {
                    "worker_id": self.worker_id, "from_checkpoint": self._last_checkpoint(),
                    "pending_operations": len(self.pending_operations())})
            else:
                if self._spool is not None:
                    self._write_run_json()
                self._record(names.EV_RUN_STARTED, "harness", {
                    "agent_name": self.agent_name, "workflow_name": self.workflow_name,
                    "budget": self.budget, "worker_id": self.worker_id,
                    "write_paths": self.write_paths})
        except Exception:  # noqa: BLE001
            internal_error("starting a run")

    def _write_run_json(self) -> None:
        meta = {
            "run_id": self.run_id, "agent_name": self.agent_name,
            "workflow_name": self.workflow_name, "budget": self.budget,
            "started_at": now_rfc3339(), "workspace": str(self.workspace),
            "initial_commit": _git_head(self.workspace), "worker_id": self.worker_id,
            "bundle_options": self.bundle_options,
        }  # fmt: skip
        (self.spool_dir / "run.json").write_text(json.dumps(meta, indent=2, default=str))

    def _last_checkpoint(self) -> str | None:
        path = self.spool_dir / "checkpoints.jsonl"
        if not path.exists():
            return None
        lines = path.read_text(encoding="utf-8").splitlines()
        for raw in reversed(lines):
            try:
                return str(json.loads(raw)["checkpoint_id"])
            except (ValueError, KeyError):
                continue
        return None

    def _end(self, exc: BaseException | None) -> None:
        if self._finished:
            return
        self._finished = True
        try:
            if exc is not None and self.failure is None:
                if isinstance(exc, RunFailed):
                    self.failure = {"type": exc.failure_type, "message": str(exc)}
                else:
                    # the same spelling as error.type on the tool span the exception came through
                    self.failure = {"type": fq_exception_type(exc), "message": scrub(str(exc))[0]}
                self.status = ("cancelled" if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
                               else "failed")
            elif self.failure is not None:
                self.status = "failed"
            elif self.status == "running":
                self.status = "succeeded"
            self._finish_span_and_metrics(exc)
            self._record(names.EV_RUN_FINISHED, "harness", {
                "status": self.status,
                "reason": self.failure["message"] if self.failure else None,
                "failure_type": self.failure["type"] if self.failure else None})
        except Exception:  # noqa: BLE001
            internal_error("finishing a run")
        finally:
            s = state()
            s.recorder.detach(self.run_id)
            if self._ctx_token is not None:
                _detach(self._ctx_token)
            if self._token is not None:
                _current.reset(self._token)
            if self._spool is not None:
                self._spool.close()
        wants_seal = self.seal_on_success or self._options.seal_on_success
        if self._spool is not None and (self.status == "failed" or wants_seal):
            try:
                self.bundle_path = self.seal()
            except Exception:  # noqa: BLE001
                internal_error("sealing the debug bundle")

    def _finish_span_and_metrics(self, exc: BaseException | None) -> None:
        s = state()
        span = self._span
        if span is not None:
            span.set_attribute(names.RUN_STATUS, self.status)
            if self.status == "failed" and self.failure is not None:
                span.set_attribute(names.ERROR_TYPE, self.failure["type"])
                span.set_status(Status(StatusCode.ERROR, self.failure["message"]))
            span.end()
        seconds = time.perf_counter() - self._start
        agent = {names.AGENT_NAME: self.agent_name}
        inst = s.instruments
        if self.workflow_name:
            inst.invoke_workflow_duration.record(seconds, {names.WORKFLOW_NAME: self.workflow_name})
        err = {names.ERROR_TYPE: self.failure["type"]} if self.failure else {}
        inst.invoke_agent_duration.record(seconds, {**agent, **err})
        inst.agent_tool_calls.record(self.tool_calls, agent)
        inst.agent_inference_calls.record(self.inference_calls, agent)
        inst.runs.add(1, {**agent, names.RUN_STATUS: self.status})

    # -- the event log ---------------------------------------------------------------------------
    def event(self, type: str, /, *, actor: str | None = "harness", span: Span | None = None,
              data: Mapping[str, Any] | None = None, **fields: Any) -> int:
        """Append an event to the run's log: ``r.event("plan", done_criteria=[...], budget={...})``.

        Fields go into the event's ``data`` (``data=`` merges a mapping first; the names ``actor``,
        ``span`` and ``data`` are therefore reserved). The event is linked to the current span (or
        ``span``), gets the next ``seq`` and is also emitted as an OpenTelemetry log event. Returns the
        ``seq`` (0 if it could not be written; telemetry never raises).
        """
        merged = {**data, **fields} if data else fields
        return self._record(type, actor, merged, span)

    def _record(self, type: str, actor: str | None, data: Mapping[str, Any] | None,
                span: Span | None = None, emit_log: bool = True) -> int:
        try:
            # worker_id on every event: two workers writing one run (missing fencing) show up as
            # interleaved ids (the concurrent_writers detector)
            record: dict[str, Any] = {"ts": now_rfc3339(), "run_id": self.run_id, "type": type,
                                      "worker_id": self.worker_id}
            if actor:
                record["actor"] = actor
            sp = span or trace.get_current_span()
            ctx = sp.get_span_context()
            if ctx.is_valid:
                record["trace_id"] = format(ctx.trace_id, "032x")
                record["span_id"] = format(ctx.span_id, "016x")
            if data:
                record["data"] = {k: v for k, v in data.items() if v is not None}
            if self._spool is not None:
                seq = self._spool.write_event(record)
            else:
                with self._lock:
                    self._seq += 1
                    seq = record["seq"] = self._seq
            if emit_log:
                _emit_log(type, record, sp)
            return seq
        except Exception:  # noqa: BLE001
            internal_error("writing an event")
            return 0

    def context_handoff(self, reason: str, *, context_tokens: int | None = None,
                        context_window: int | None = None, **fields: Any) -> int:
        """Record that the agent summarised or handed off its context (``context.handoff``).

        With the tokens in use and the window size, ``context_pressure`` can tell a needed handoff
        from a premature one ("context anxiety").
        """
        return self._record(names.EV_CONTEXT_HANDOFF, "harness", {
            "reason": reason, "context_tokens": context_tokens, "context_window": context_window,
            **fields})

    def signal(self, kind: str, by: str | None = None, **fields: Any) -> int:
        """A human or supervisor signal: ``approve``, ``pause``, ``revise``, ``add_context``, ``cancel``."""
        return self._record(names.EV_SIGNAL, "human", {"kind": kind, "by": by, **fields})

    def checkpoint(self, checkpoint_id: str, state_values: Any, *, step: int | None = None,
                   parent_checkpoint_id: str | None = None,
                   metadata: Mapping[str, Any] | None = None) -> int:
        """Record a checkpoint (spooled to checkpoints.jsonl) and a ``checkpoint.saved`` event.

        The spans queued for the spool thread are written first, so everything up to a checkpoint
        survives a SIGKILL.
        """
        if self._spool is None:
            return self._record(names.EV_CHECKPOINT_SAVED, "harness",
                                {"checkpoint_id": checkpoint_id, "step": step})
        try:
            self._spool.flush()
            line = {"checkpoint_id": checkpoint_id, "parent_checkpoint_id": parent_checkpoint_id,
                    "ts": now_rfc3339(), "thread_id": self.conversation_id, "step": step,
                    "values": state_values, "metadata": dict(metadata or {}), "pending_writes": []}
            with open(self.spool_dir / "checkpoints.jsonl", "a", encoding="utf-8") as fh:
                fh.write(to_json(line) + "\n")
            (self.spool_dir / "last_state.json").write_text(to_json(state_values), encoding="utf-8")
        except Exception:  # noqa: BLE001
            internal_error("writing a checkpoint")
        return self._record(names.EV_CHECKPOINT_SAVED, "harness",
                            {"checkpoint_id": checkpoint_id, "step": step})

    def fail(self, reason: str, *, type: str = "error", raise_: bool = False) -> None:
        """Mark the run failed (budget, iteration cap, evaluation ...). Sealed at exit."""
        self.failure = {"type": type, "message": reason}
        self.status = "failed"
        self._record(names.EV_ERROR, "harness", {"type": type, "message": reason})
        if raise_:
            raise RunFailed(type, reason)

    # -- operations --------------------------------------------------------------------------------
    def operation_id(self, kind: str, target: str, key: str | None = None) -> str:
        basis = f"{self.run_id}\x00{kind}\x00{target}\x00{key or ''}"
        return "op_" + hashlib.sha256(basis.encode()).hexdigest()[:16]

    @contextmanager
    def operation(self, kind: str, target: str, args: Mapping[str, Any] | None = None, *,
                  key: str | None = None) -> Generator[Operation]:
        """Bracket a side effect: ``operation.intent`` before, ``operation.outcome`` after.

        The id is stable for (run id, kind, target, key), so a resumed worker finds unfinished
        operations with ``pending_operations()`` and reconciles instead of repeating them.
        """
        from ._content import input_hash

        op = Operation(self, self.operation_id(kind, target, key), kind, target)
        self._record(names.EV_OPERATION_INTENT, "harness", {
            "operation_id": op.operation_id, "kind": kind, "target": target,
            "args_hash": input_hash(dict(args or {}))})
        try:
            yield op
        except BaseException:
            self._record(names.EV_OPERATION_OUTCOME, "harness", {
                "operation_id": op.operation_id, "status": "failed"})
            raise
        if op.status == "unknown":
            op.status = "succeeded"
        elif op.status == "unknown_reported":
            op.status = "unknown"
        self._record(names.EV_OPERATION_OUTCOME, "harness", {
            "operation_id": op.operation_id, "status": op.status, "external_id": op.external_id})

    def pending_operations(self) -> list[dict[str, Any]]:
        """Operations with an intent and no outcome in this run's spool (oldest first)."""
        from ..bundle.spool import spool_files

        intents: dict[str, dict[str, Any]] = {}
        for path in spool_files(self.spool_dir, "events.jsonl"):
            with open(path, encoding="utf-8") as fh:
                for raw in fh:
                    try:
                        ev = json.loads(raw)
                    except ValueError:
                        continue
                    data = ev.get("data") or {}
                    if ev.get("type") == names.EV_OPERATION_INTENT:
                        intents[data.get("operation_id", "")] = data
                    elif ev.get("type") == names.EV_OPERATION_OUTCOME:
                        intents.pop(data.get("operation_id", ""), None)
        return list(intents.values())

    # -- counting (called by the decorators) ---------------------------------------------------------
    def _count_tool_call(self, tool_name: str, input_hash: str) -> None:
        key = (tool_name, input_hash)
        with self._lock:
            self.tool_calls += 1
            n = self.tool_calls
            retry = key == self._last_tool
            self._last_tool = key
        if retry:
            state().instruments.retries.add(1, {
                names.AGENT_NAME: self.agent_name, names.OPERATION_NAME: names.OP_EXECUTE_TOOL,
                names.TOOL_NAME: tool_name})
        if "tool_calls" in self.budget:
            self._check_budget("tool_calls", n)

    def _count_inference(self, *, failed: bool, provider: str) -> None:
        with self._lock:
            self.inference_calls += 1
            retry = self._last_inference_failed
            self._last_inference_failed = failed
        if retry:
            state().instruments.retries.add(1, {
                names.AGENT_NAME: self.agent_name, names.OPERATION_NAME: names.OP_CHAT,
                names.PROVIDER_NAME: provider})

    # -- budget --------------------------------------------------------------------------------------
    def add_tokens(self, n: int) -> None:
        """Count tokens against ``budget["tokens"]`` (``@llm`` calls this; call it for hand-made calls)."""
        with self._lock:
            self.tokens_used += n
            used = self.tokens_used
        self._check_budget("tokens", used)

    def _check_budget(self, kind: str, used: float) -> None:
        """Report the share of a budget used; on the first excess, record it and apply ``on_budget``.

        ``record`` (default) writes a ``budget.exceeded`` event only; ``fail`` also marks the run
        failed (``budget_exceeded``) without interrupting it; ``raise`` marks it failed and raises
        :class:`RunFailed` from the decorated call that crossed the limit — the one case where
        agenttrail raises into user code, because the user asked for it.
        """
        limit = self.budget.get(kind)
        if not isinstance(limit, int | float) or isinstance(limit, bool) or limit <= 0:
            return
        s = state()
        s.instruments.budget_used.set(min(used / float(limit), 10.0),
                                      {names.AGENT_NAME: self.agent_name, names.BUDGET_KIND: kind})
        if used <= limit or kind in self._budget_hit:
            return
        self._budget_hit.add(kind)
        message = f"{kind} budget of {limit:,} exhausted ({used:,} used)"
        self._record(names.EV_BUDGET_EXCEEDED, "system", {"kind": kind, "limit": limit, "used": used})
        if self.on_budget == "record":
            return
        self.fail(message, type="budget_exceeded", raise_=self.on_budget == "raise")

    # -- the bundle --------------------------------------------------------------------------------
    def seal(self, out_dir: str | os.PathLike[str] | None = None, *, scrub_secrets: bool = True) -> Path:
        """Seal this run's spool into a debug bundle.

        Default location: ``<bundle_dir>/<run_id>`` when ``configure(recorder={"bundle_dir": ...})``
        is set, else ``<workspace>/_debug``. Sealing a live run captures what was written so far.
        """
        from ..bundle.writer import BundleOptions, seal_spool

        if self._spool is not None:
            self._spool.flush()  # spans still queued for the spool thread
        opts = BundleOptions.from_mapping(self.bundle_options)
        opts.scrub = scrub_secrets and opts.scrub
        if out_dir is not None:
            target = Path(out_dir)
        elif self._options.bundle_dir is not None:
            target = self._options.bundle_dir / _safe_name(self.run_id)
        else:
            target = self.workspace / "_debug"
        return seal_spool(self.spool_dir, target, status=self.status, failure=self.failure,
                          capture_mode=state().capture.value, options=opts)


def _safe_name(run_id: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
    return keep.strip(".") or "run"


def _attach_span(span: Span) -> object:
    from opentelemetry import context as otel_context

    return otel_context.attach(trace.set_span_in_context(span))


def _detach(token: object) -> None:
    from opentelemetry import context as otel_context

    try:
        otel_context.detach(token)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - detaching in another context only warns
        pass


def _emit_log(event_type: str, record: Mapping[str, Any], span: Span) -> None:
    """The event as an OpenTelemetry log event, linked to ``span``.

    The body is the event's data as a JSON string (keeps Loki's ``| json`` working), scrubbed of
    secrets and truncated; content fields (tool arguments and results) only when content capture
    includes events.
    """
    s = state()
    body = record.get("data")
    attrs: dict[str, Any] = {names.EVENT_TYPE: event_type, names.RUN_ID: record["run_id"],
                             names.EVENT_SEQ: record.get("seq", 0)}
    ctx = trace.set_span_in_context(span)
    if body is not None:
        if not s.capture.on_events and isinstance(body, dict):
            body = {k: v for k, v in body.items() if k not in _CONTENT_FIELDS}
        s.logger.emit(event_name=event_type, body=safe_content(body), attributes=attrs, context=ctx)
    else:
        s.logger.emit(event_name=event_type, attributes=attrs, context=ctx)


#: Event data fields that hold content (governed by the capture mode on the log pipeline).
_CONTENT_FIELDS: Final = frozenset({"arguments", "result", "messages", "output"})


def run(run_id: str, agent_name: str, workflow_name: str | None = None,
        budget: Mapping[str, Any] | None = None, **kwargs: Any) -> Run:
    """Start a run: ``with agenttrail.run("s_123", "builder", workspace=ws) as r: ...``."""
    return Run(run_id, agent_name, workflow_name=workflow_name, budget=budget, **kwargs)
