"""OpenAI Agents SDK integration: the SDK's traces as GenAI spans and bundle events.

    from agents import set_trace_processors
    from agenttrail.integrations.openai_agents import AgenttrailTracingProcessor, instrument_openai_client

    set_trace_processors([AgenttrailTracingProcessor(side_effect_tools={"refund_invoice"})])
    client = instrument_openai_client(AsyncOpenAI(...))     # rate-limited responses → events

The processor maps the SDK's spans (``set_trace_processors`` replaces the SDK's exporter to the
OpenAI backend; ``add_trace_processor`` keeps it):

=============  ==================================  ==================================================
SDK span       OpenTelemetry span                  bundle events (inside ``agenttrail.run``)
=============  ==================================  ==================================================
trace          ``invoke_workflow {trace name}``    —
agent          ``invoke_agent {agent}``            —
generation     ``chat {model}`` (CLIENT)           ``model.call`` (tokens, duration, error)
response       ``chat {model}`` (CLIENT)           ``model.call``
function       ``execute_tool {tool}``             ``tool.started`` / ``tool.finished`` (input hash)
handoff        ``handoff {from} -> {to}``          ``agent.handoff``
guardrail      ``guardrail {name}``                —
=============  ==================================  ==================================================

so the detectors that read ``tool.*`` and ``model.call`` events work on SDK agents unchanged. The
OpenAI client retries 429 responses inside one generation; :func:`instrument_openai_client` records
each of them as a ``rate_limited`` event. Needs the ``agenttrail[openai-agents]`` extra.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from agents.tracing import Span as SdkSpan
from agents.tracing import Trace as SdkTrace
from agents.tracing import TracingProcessor
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .. import names
from ..instrument._content import input_hash, safe_content, truncate
from ..instrument._run import Run, current_run
from ..instrument._runtime import internal_error, state
from ._common import EV_RATE_LIMITED, HANDOFF_FROM, HANDOFF_TO, KIND_HANDOFF, jsonable

__all__ = ["EV_HANDOFF", "AgenttrailTracingProcessor", "instrument_openai_client", "rate_limit_hook"]

EV_HANDOFF = names.EV_AGENT_HANDOFF
C = TypeVar("C")


class _Open:
    __slots__ = ("data", "ihash", "run", "span", "t0")

    def __init__(self, span: Span, run: Run | None, data: dict[str, Any] | None = None) -> None:
        self.span = span
        self.run = run
        self.t0 = time.perf_counter()
        self.data = data or {}
        self.ihash: str | None = None


def _parse_args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


class AgenttrailTracingProcessor(TracingProcessor):
    """A ``TracingProcessor`` that turns the Agents SDK's spans into agenttrail telemetry.

    ``side_effect_tools`` names the function tools that change the world (sent as
    ``side_effect: true``, so duplicate-side-effect detection applies to them);
    ``idempotency_key`` may derive a key from ``(tool name, parsed arguments)``; ``provider`` is the
    ``gen_ai.provider.name`` of generation spans.
    """

    def __init__(self, *, side_effect_tools: Collection[str] = (),
                 idempotency_key: Callable[[str, Any], str | None] | None = None,
                 provider: str = "openai") -> None:
        self.side_effect_tools = frozenset(side_effect_tools)
        self.idempotency_key = idempotency_key
        self.provider = provider
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()

    # -- traces ----------------------------------------------------------------------------------
    def on_trace_start(self, trace: SdkTrace) -> None:
        try:
            run = current_run()
            attrs: dict[str, Any] = {names.OPERATION_NAME: names.OP_INVOKE_WORKFLOW,
                                     names.WORKFLOW_NAME: trace.name, names.SPAN_KIND: "workflow"}
            group = getattr(trace, "group_id", None)
            if group:
                attrs[names.CONVERSATION_ID] = str(group)
                if run is not None and run.conversation_id == run.run_id:
                    run.conversation_id = str(group)
            span = state().tracer.start_span(f"invoke_workflow {trace.name}", kind=SpanKind.INTERNAL,
                                             attributes=attrs)
            with self._lock:
                self._open[trace.trace_id] = _Open(span, run)
        except Exception:  # noqa: BLE001
            internal_error("recording an Agents SDK trace start")

    def on_trace_end(self, trace: SdkTrace) -> None:
        try:
            with self._lock:
                entry = self._open.pop(trace.trace_id, None)
            if entry is not None:
                entry.span.end()
        except Exception:  # noqa: BLE001
            internal_error("recording an Agents SDK trace end")

    # -- spans -----------------------------------------------------------------------------------
    def on_span_start(self, span: SdkSpan[Any]) -> None:
        try:
            self._start(span)
        except Exception:  # noqa: BLE001
            internal_error("recording an Agents SDK span start")

    def on_span_end(self, span: SdkSpan[Any]) -> None:
        try:
            self._finish(span)
        except Exception:  # noqa: BLE001
            internal_error("recording an Agents SDK span end")

    def shutdown(self) -> None:
        with self._lock:
            leftovers = list(self._open.values())
            self._open.clear()
        for entry in leftovers:
            entry.span.end()

    def force_flush(self) -> None:
        return None

    # -- internals -------------------------------------------------------------------------------
    def _parent(self, span: SdkSpan[Any]) -> tuple[Span | None, Run | None]:
        with self._lock:
            parent = self._open.get(span.parent_id or "") or self._open.get(span.trace_id)
        if parent is None:
            return None, current_run()
        return parent.span, parent.run or current_run()

    def _start(self, span: SdkSpan[Any]) -> None:
        data = span.span_data
        kind = data.type
        parent, run = self._parent(span)
        attrs: dict[str, Any]
        otel_kind = SpanKind.INTERNAL
        if kind == "agent":
            name = f"invoke_agent {data.name}"
            attrs = {names.OPERATION_NAME: names.OP_INVOKE_AGENT, names.AGENT_NAME: data.name,
                     names.SPAN_KIND: "agent"}
        elif kind in ("generation", "response"):
            model = getattr(data, "model", None)
            name = f"chat {model}" if model else "chat"
            attrs = {names.OPERATION_NAME: names.OP_CHAT, names.PROVIDER_NAME: self.provider,
                     names.SPAN_KIND: "llm"}
            if model:
                attrs[names.REQUEST_MODEL] = str(model)
            otel_kind = SpanKind.CLIENT
        elif kind == "function":
            name = f"execute_tool {data.name}"
            attrs = {names.OPERATION_NAME: names.OP_EXECUTE_TOOL, names.TOOL_NAME: data.name,
                     names.TOOL_TYPE: "function", names.TOOL_CALL_ID: span.span_id,
                     names.SPAN_KIND: "tool"}
            if data.name in self.side_effect_tools:
                attrs[names.TOOL_SIDE_EFFECT] = True
        elif kind == "handoff":
            name = f"handoff {data.from_agent} -> {data.to_agent}"
            attrs = {names.SPAN_KIND: KIND_HANDOFF, HANDOFF_FROM: data.from_agent or "",
                     HANDOFF_TO: data.to_agent or ""}
        else:
            label = getattr(data, "name", None) or getattr(data, "agent_name", None)
            name = f"{kind} {label}" if label else kind
            attrs = {names.SPAN_KIND: kind}
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        otel_span = state().tracer.start_span(name, context=ctx, kind=otel_kind, attributes=attrs)
        entry = _Open(otel_span, run)
        with self._lock:
            self._open[span.span_id] = entry
        if kind == "function" and data.input is not None:
            self._tool_started(span, entry)  # the SDK usually fills the arguments in later

    def _tool_started(self, span: SdkSpan[Any], entry: _Open) -> None:
        """Identity (input hash, idempotency key) on the span and the ``tool.started`` event."""
        data = span.span_data
        args = _parse_args(data.input)
        ihash = input_hash(args if isinstance(args, Mapping) else {"input": args})
        side_effect = data.name in self.side_effect_tools
        key = self.idempotency_key(data.name, args) if self.idempotency_key else None
        otel_span = entry.span
        otel_span.set_attribute(names.TOOL_INPUT_HASH, ihash)
        if key:
            otel_span.set_attribute(names.TOOL_IDEMPOTENCY_KEY, key)
        if state().capture.on_spans:
            otel_span.set_attribute(names.TOOL_CALL_ARGUMENTS, safe_content(jsonable(args)))
        entry.data = {"tool": data.name, "call_id": span.span_id, "input_hash": ihash,
                      "side_effect": side_effect, "idempotency_key": key}
        run = entry.run
        if run is not None:
            event = dict(entry.data)
            if state().capture.any:
                event["arguments"] = safe_content(jsonable(args))
            run.event(names.EV_TOOL_STARTED, actor="tool", span=otel_span, data=event)
            run.tool_calls += 1

    def _finish(self, span: SdkSpan[Any]) -> None:
        with self._lock:
            entry = self._open.pop(span.span_id, None)
        if entry is None:
            return
        data = span.span_data
        kind = data.type
        seconds = time.perf_counter() - entry.t0
        error = span.error
        otel_span, run = entry.span, entry.run
        message = None
        if error:
            message = truncate(safe_content(str(error.get("message") or "error")), 1024)
            err_type = _error_type(error)
            otel_span.set_attribute(names.ERROR_TYPE, err_type)
            otel_span.set_status(Status(StatusCode.ERROR, message))
        if kind in ("generation", "response"):
            self._finish_generation(span, entry, seconds, message)
        elif kind == "function":
            if not entry.data:
                self._tool_started(span, entry)
            result = getattr(data, "output", None)
            if state().capture.on_spans and result is not None and not error:
                otel_span.set_attribute(names.TOOL_CALL_RESULT, safe_content(jsonable(result)))
            m_attrs: dict[str, Any] = {names.TOOL_NAME: data.name, names.TOOL_TYPE: "function"}
            if error:
                m_attrs[names.ERROR_TYPE] = _error_type(error)
                state().instruments.tool_errors.add(1, m_attrs)
            state().instruments.execute_tool_duration.record(seconds, m_attrs)
            if run is not None:
                event: dict[str, Any] = {
                    "tool": data.name, "call_id": span.span_id, "status": "error" if error else "ok",
                    "error": message, "latency_ms": round(seconds * 1000, 3),
                    "input_hash": entry.data.get("input_hash")}
                if state().capture.any and result is not None and not error:
                    event["result"] = safe_content(jsonable(result))
                run.event(names.EV_TOOL_FINISHED, actor="tool", span=otel_span, data=event)
        elif kind == "handoff":
            # the SDK knows the target only once the handoff ran
            otel_span.update_name(f"handoff {data.from_agent} -> {data.to_agent}")
            otel_span.set_attribute(HANDOFF_TO, data.to_agent or "")
            if run is not None:
                run.event(EV_HANDOFF, actor="harness", span=otel_span, data={
                    "from_agent": data.from_agent, "to_agent": data.to_agent})
        otel_span.end()

    def _finish_generation(self, span: SdkSpan[Any], entry: _Open, seconds: float,
                           message: str | None) -> None:
        data = span.span_data
        usage: Mapping[str, Any] = getattr(data, "usage", None) or {}
        response = getattr(data, "response", None)
        model = getattr(data, "model", None) or getattr(response, "model", None)
        if not usage and response is not None and getattr(response, "usage", None) is not None:
            usage = jsonable(response.usage)
        in_tok, out_tok = usage.get("input_tokens"), usage.get("output_tokens")
        cached = (usage.get("input_tokens_details") or {}).get("cached_tokens")
        otel_span = entry.span
        if isinstance(in_tok, int):
            otel_span.set_attribute(names.USAGE_INPUT_TOKENS, in_tok)
        if isinstance(out_tok, int):
            otel_span.set_attribute(names.USAGE_OUTPUT_TOKENS, out_tok)
        if isinstance(cached, int):
            otel_span.set_attribute(names.USAGE_CACHE_READ_INPUT_TOKENS, cached)
        if response is not None and getattr(response, "id", None):
            otel_span.set_attribute(names.RESPONSE_ID, str(response.id))
        s = state()
        m_attrs: dict[str, Any] = {names.OPERATION_NAME: names.OP_CHAT, names.PROVIDER_NAME: self.provider}
        if model:
            m_attrs[names.REQUEST_MODEL] = str(model)
        for token_type, n in (("input", in_tok), ("output", out_tok)):
            if isinstance(n, int):
                s.instruments.token_usage.record(n, {**m_attrs, names.TOKEN_TYPE: token_type})
        s.instruments.operation_duration.record(
            seconds, {**m_attrs, names.ERROR_TYPE: _error_type(span.error)} if span.error else m_attrs)
        run = entry.run
        if run is not None:
            run.inference_calls += 1
            run.add_tokens((in_tok or 0) + (out_tok or 0))
            run.event(names.EV_MODEL_CALL, actor="model", span=otel_span, data={
                "provider": self.provider, "model": model, "input_tokens": in_tok,
                "output_tokens": out_tok, "cache_read_tokens": cached,
                "duration_ms": round(seconds * 1000, 3), "error": message})


def _error_type(error: Mapping[str, Any] | None) -> str:
    if not error:
        return "_OTHER"
    data = error.get("data") or {}
    if isinstance(data, Mapping):
        for key in ("error_type", "type", "error"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value[:120]
    return str(error.get("message") or "_OTHER")[:120]


# ---------------------------------------------------------------------------------------------
# rate limits: the OpenAI client retries 429s on its own, below the SDK's spans


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue
    return None


def _record_rate_limit(response: Any) -> None:
    try:
        if getattr(response, "status_code", None) != 429:
            return
        request = getattr(response, "request", None)
        url = getattr(request, "url", None)
        endpoint = getattr(url, "path", None) or str(url or "")
        s = state()
        s.instruments.rate_limits.add(1, {names.PROVIDER_NAME: "openai"})
        run = current_run()
        if run is not None:
            run.event(EV_RATE_LIMITED, actor="model", data={
                "endpoint": endpoint, "retry_after_s": _retry_after_s(response.headers),
                "provider": "openai", "status": 429})
    except Exception:  # noqa: BLE001
        internal_error("recording a rate-limited response")


def rate_limit_hook(*, is_async: bool) -> Callable[[Any], Any]:
    """An httpx ``response`` event hook that records 429 responses as ``rate_limited`` events."""
    if is_async:

        async def ahook(response: Any) -> None:
            _record_rate_limit(response)

        return ahook

    def hook(response: Any) -> None:
        _record_rate_limit(response)

    return hook


def instrument_openai_client(client: C) -> C:
    """Add the rate-limit hook to an ``OpenAI`` / ``AsyncOpenAI`` client (returned for chaining).

    Every 429 the client receives — including the ones it then retries by itself — becomes a
    ``rate_limited`` event (``endpoint``, ``retry_after_s``) and counts in ``agenttrail.rate_limits``.
    """
    http = getattr(client, "_client", None)
    hooks = getattr(http, "event_hooks", None)
    if http is None or hooks is None:
        raise TypeError(f"{type(client).__name__} has no httpx client to instrument")
    is_async = type(client).__name__.startswith("Async")
    response_hooks = list(hooks.get("response", []))
    if not any(getattr(h, "_agenttrail", False) for h in response_hooks):
        hook = rate_limit_hook(is_async=is_async)
        hook._agenttrail = True  # type: ignore[attr-defined]
        response_hooks.append(hook)
        http.event_hooks = {**hooks, "response": response_hooks}
    return client
