"""``@node``, ``@tool`` and ``@llm``: GenAI spans, events and metrics from a decorator.

Everything that does not depend on the call (span names, attribute dicts, the argument binder) is
computed once at decoration time; the per-call path builds one attribute dict and starts one span.
"""

from __future__ import annotations

import inspect
import itertools
import secrets
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.genai.utils import fq_exception_type

from .. import names
from ._content import input_hash, safe_content, scrub, truncate
from ._recorder import set_plain_attributes
from ._run import Run, current_run
from ._runtime import RunFailed, internal_error, state
from ._stream import is_stream, proxy_stream
from ._usage import Usage, extract_response
from ._wrap import Call, wrap

F = TypeVar("F", bound=Callable[..., Any])
_call_ids = itertools.count(1)
# A per-process prefix keeps call ids unique within a run that several workers write in turn (a
# resumed run): a bare counter restarts at 1 in every new process.
_CALL_PREFIX: Final = secrets.token_hex(3)

_P = inspect.Parameter
_POSITIONAL: Final = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)


class _Binder:
    """Map a call's ``(args, kwargs)`` to ``{parameter: value}`` like ``Signature.bind_partial``.

    Precomputed from the signature, so the per-call cost is a ``zip`` instead of a bind (~10x
    cheaper). Defaults are not applied (the identity of a call is what the caller passed). ``self``
    / ``cls`` of methods are left out of the arguments.
    """

    __slots__ = ("names", "positional", "skip_first", "var_keyword", "var_positional")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.positional: tuple[str, ...] = ()
        self.names: frozenset[str] = frozenset()
        self.var_positional: str | None = None
        self.var_keyword: str | None = None
        self.skip_first = False
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            self.positional = ("args",)
            self.var_positional = "args"
            self.var_keyword = "kwargs"
            return
        self.positional = tuple(p.name for p in params if p.kind in _POSITIONAL)
        self.names = frozenset(p.name for p in params if p.kind is not _P.VAR_KEYWORD)
        for p in params:
            if p.kind is _P.VAR_POSITIONAL:
                self.var_positional = p.name
            elif p.kind is _P.VAR_KEYWORD:
                self.var_keyword = p.name
        self.skip_first = bool(self.positional) and self.positional[0] in ("self", "cls")

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        positional = self.positional
        if len(args) <= len(positional):
            out = dict(zip(positional, args, strict=False))
        else:
            out = dict(zip(positional, args, strict=False))
            out[self.var_positional or "args"] = list(args[len(positional):])
        if kwargs:
            if self.var_keyword is None:
                out.update(kwargs)
            else:
                extra = {k: v for k, v in kwargs.items() if k not in self.names}
                out.update((k, v) for k, v in kwargs.items() if k in self.names)
                if extra:
                    out[self.var_keyword] = extra
        if self.skip_first:
            out.pop(positional[0], None)
        return out


def _is_gen(fn: Callable[..., Any]) -> bool:
    return inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)


class _SpanCall:
    """Shared span bookkeeping: start, make current (or keep the context for a generator), end."""

    __slots__ = ("ctx", "run", "span", "t0", "token")

    def __init__(self, name: str, kind: SpanKind, attrs: dict[str, Any], *, current: bool,
                 run: Run | None, extra: tuple[str, Any] | None = None) -> None:
        self.run = run
        self.span: Span = state().tracer.start_span(name, kind=kind, attributes=attrs)
        ctx = trace.set_span_in_context(self.span)
        if extra is not None:
            ctx = otel_context.set_value(extra[0], extra[1], ctx)
        self.ctx: Context = ctx
        self.token = otel_context.attach(ctx) if current else None
        self.t0 = time.perf_counter()

    def detach(self) -> None:
        token, self.token = self.token, None
        if token is not None:
            try:
                otel_context.detach(token)
            except Exception:  # noqa: BLE001 - detaching in a different context only warns
                pass

    def end(self, exc: BaseException | None, error_type: str | None = None,
            message: str | None = None) -> float:
        seconds = time.perf_counter() - self.t0
        if exc is not None or error_type is not None:
            etype = error_type or (fq_exception_type(exc) if exc is not None else None) or "_OTHER"
            self.span.set_attribute(names.ERROR_TYPE, etype)
            desc = message if message is not None else (scrub(str(exc))[0] if exc is not None else "")
            self.span.set_status(Status(StatusCode.ERROR, truncate(desc, 1024)))
        self.detach()
        self.span.end()
        return seconds


# ---------------------------------------------------------------------------------------------
# @node


def node(name: str | None = None) -> Callable[[F], F]:
    """A harness or graph node: one span per step, nested under the run, with node events.

    Works on functions, coroutines, generators and async generators (spans created while a generator
    body runs nest under the node's span), and on methods.
    """
    if callable(name):  # bare @node
        return node()(name)  # type: ignore[return-value]

    def decorate(fn: F) -> F:
        node_name = name or fn.__name__
        attrs = {names.NODE_NAME: node_name, names.SPAN_KIND: "node"}
        is_gen = _is_gen(fn)

        class NodeCall:
            __slots__ = ("ctx", "sc")

            def __init__(self) -> None:
                run = current_run()
                self.sc = _SpanCall(node_name, SpanKind.INTERNAL, dict(attrs), current=not is_gen,
                                    run=run)
                self.ctx = self.sc.ctx if is_gen else None
                if run is not None:
                    run._record(names.EV_NODE_STARTED, "harness", {"node": node_name},
                                self.sc.span, emit_log=False)

            def chunk(self, item: Any) -> None:
                return None

            def finish(self, result: Any, exc: BaseException | None) -> None:
                seconds = self.sc.end(exc)
                run = self.sc.run
                if run is not None:
                    run._record(names.EV_NODE_FINISHED, "harness", {
                        "node": node_name, "status": "error" if exc else "ok",
                        "duration_ms": round(seconds * 1000, 3),
                        "error": type(exc).__name__ if exc else None}, self.sc.span, emit_log=False)

        return wrap(fn, lambda a, k: NodeCall())

    return decorate


# ---------------------------------------------------------------------------------------------
# @tool


def _tool_failure(result: Any) -> tuple[str, str, int | None] | None:
    """A tool that *returns* a failure (non-zero exit code) instead of raising one."""
    code = _exit_code(result)
    if code is None or code == 0:
        return None
    if isinstance(result, Mapping):
        stderr: Any = result.get("stderr") or result.get("error")
    else:
        stderr = getattr(result, "stderr", None)
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else str(stderr or "")
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    msg = lines[-1] if lines else f"exit code {code}"
    if len(lines) > 1:
        # the most telling line is usually the first error line, e.g. "npm ERR! code ERESOLVE"
        errs = [ln for ln in lines if "err" in ln.lower()]
        msg = errs[0] if errs else msg
    return "tool_error", scrub(msg)[0], code


def _exit_code(result: Any) -> int | None:
    if result is None or isinstance(result, str | bytes | int | float | list | tuple):
        return None
    if isinstance(result, Mapping):
        code = result.get("exit_code", result.get("returncode"))
    else:
        code = getattr(result, "exit_code", getattr(result, "returncode", None))
    return code if isinstance(code, int) and not isinstance(code, bool) else None


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(
    name: str | None = None, *, side_effect: bool = False,
    idempotency_key: str | Callable[..., str] | None = None, tool_type: str = "function",
    description: str | None = None, failure: Callable[[Any], tuple[str, str, int | None] | None] | None = None,
) -> Callable[[F], F]: ...  # fmt: skip


def tool(
    name: Any = None,
    *,
    side_effect: bool = False,
    idempotency_key: str | Callable[..., str] | None = None,
    tool_type: str = "function",
    description: str | None = None,
    failure: Callable[[Any], tuple[str, str, int | None] | None] | None = None,
) -> Any:
    """A tool: ``execute_tool {name}`` span, ``tool.started``/``tool.finished`` events, metrics.

    The argument hash (``agenttrail.tool.input_hash``) is always recorded; arguments and result only
    when content capture is on. A tool that returns ``{"exit_code": n}`` (or an object with
    ``returncode``) with ``n != 0`` is recorded as failed; pass ``failure=`` to decide otherwise
    (return ``(error_type, message, exit_code)`` or ``None``).
    """
    if callable(name):
        return tool()(name)
    detect_failure = failure or _tool_failure

    def decorate(fn: F) -> F:
        tool_name: str = name or fn.__name__
        bind = _Binder(fn)
        is_gen = _is_gen(fn)
        base: dict[str, Any] = {
            names.OPERATION_NAME: names.OP_EXECUTE_TOOL,
            names.TOOL_NAME: tool_name,
            names.TOOL_TYPE: tool_type,
            names.SPAN_KIND: "tool",
        }
        if description:
            base[names.TOOL_DESCRIPTION] = description
        if side_effect:
            base[names.TOOL_SIDE_EFFECT] = True
        span_name = f"execute_tool {tool_name}"
        metric_attrs = {names.TOOL_NAME: tool_name, names.TOOL_TYPE: tool_type}

        class ToolCall:
            __slots__ = ("arguments", "call_id", "chunks", "ctx", "ihash", "sc")

            def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
                s = state()
                run = current_run()
                self.arguments = bind(args, kwargs)
                self.ihash = input_hash(self.arguments)
                if run is not None:
                    run._count_tool_call(tool_name, self.ihash)  # may raise RunFailed (on_budget)
                self.call_id = f"call_{_CALL_PREFIX}_{next(_call_ids):06d}"
                attrs = base.copy()
                attrs[names.TOOL_CALL_ID] = self.call_id
                attrs[names.TOOL_INPUT_HASH] = self.ihash
                ikey: str | None = None
                if idempotency_key is not None:
                    ikey = (idempotency_key(*args, **kwargs) if callable(idempotency_key)
                            else idempotency_key)
                    attrs[names.TOOL_IDEMPOTENCY_KEY] = ikey
                if run is not None:
                    attrs[names.AGENT_NAME] = run.agent_name
                capture = s.capture
                if capture.on_spans:
                    attrs[names.TOOL_CALL_ARGUMENTS] = safe_content(self.arguments)
                self.sc = _SpanCall(span_name, SpanKind.INTERNAL, attrs, current=not is_gen, run=run)
                self.ctx = self.sc.ctx if is_gen else None
                self.chunks: list[Any] | None = [] if is_gen else None
                if run is not None:
                    data: dict[str, Any] = {
                        "tool": tool_name, "call_id": self.call_id, "input_hash": self.ihash,
                        "side_effect": side_effect, "idempotency_key": ikey}
                    if capture.any:
                        data["arguments"] = safe_content(self.arguments)
                    run._record(names.EV_TOOL_STARTED, "tool", data, self.sc.span)

            def chunk(self, item: Any) -> None:
                if self.chunks is not None and len(self.chunks) < 1000:
                    self.chunks.append(item)

            def finish(self, result: Any, exc: BaseException | None) -> None:
                s = state()
                if self.chunks is not None:
                    result = self.chunks
                failed = None if exc is not None else detect_failure(result)
                if exc is None and s.capture.on_spans:
                    self.sc.span.set_attribute(names.TOOL_CALL_RESULT, safe_content(result))
                if failed is not None:
                    seconds = self.sc.end(None, failed[0], failed[1])
                    etype, err, exit_code = failed
                elif exc is not None:
                    seconds = self.sc.end(exc)
                    etype, err, exit_code = fq_exception_type(exc), truncate(scrub(str(exc))[0], 2048), None
                else:
                    seconds = self.sc.end(None)
                    etype, err, exit_code = None, None, _exit_code(result)
                run = self.sc.run
                if run is None and etype is None:
                    s.instruments.execute_tool_duration.record(seconds, metric_attrs)
                    return
                m_attrs = metric_attrs.copy()
                if run is not None:
                    m_attrs[names.AGENT_NAME] = run.agent_name
                if etype is not None:
                    m_attrs[names.ERROR_TYPE] = etype
                    s.instruments.tool_errors.add(1, m_attrs)
                s.instruments.execute_tool_duration.record(seconds, m_attrs)
                if run is not None:
                    data: dict[str, Any] = {
                        "tool": tool_name, "call_id": self.call_id,
                        "status": "error" if etype else "ok", "error": err,
                        "error_type": etype, "exit_code": exit_code,
                        "latency_ms": round(seconds * 1000, 3), "input_hash": self.ihash}
                    if s.capture.any and exc is None:
                        data["result"] = safe_content(result)
                    run._record(names.EV_TOOL_FINISHED, "tool", data, self.sc.span)

        return wrap(fn, ToolCall)

    return decorate


# ---------------------------------------------------------------------------------------------
# @llm

_UTIL_GENAI_HANDLER: Final = "opentelemetry.util.genai.handler"
#: Instrumentation scopes that record ``gen_ai.client.token.usage`` themselves.
_METRIC_EMITTING_SCOPES: Final = ("opentelemetry.instrumentation.",)


def _inference_context_data(capture_content: bool) -> tuple[str, Any] | None:
    """The util-genai "active inference" marker, when a util-genai instrumentation can be running.

    The official OpenAI / Anthropic instrumentations (opentelemetry-util-genai ``TelemetryHandler``)
    see it, suppress their own span and metrics, and publish usage and response data into it: one
    inference, one span, tokens counted once. Skipped (no cost) when no util-genai handler is loaded.
    """
    if _UTIL_GENAI_HANDLER not in sys.modules:
        return None
    from opentelemetry.util.genai.invocation import CLIENT_INFERENCE_CONTEXT_KEY, InferenceData

    return CLIENT_INFERENCE_CONTEXT_KEY, InferenceData(capture_content=capture_content)


def _semconv_messages(messages: Any, role: str = "user") -> Any:
    """Messages in the GenAI conventions' shape: ``[{role, parts: [{type: "text", content}]}]``.

    Accepts a string, or OpenAI/Anthropic style ``[{"role", "content": str}]``; anything else is kept
    as given (serialised as JSON).
    """
    if isinstance(messages, str):
        return [{"role": role, "parts": [{"type": "text", "content": messages}]}]
    if isinstance(messages, list | tuple):
        out: list[Any] = []
        for m in messages:
            if isinstance(m, Mapping) and isinstance(m.get("content"), str):
                out.append({"role": m.get("role", role),
                            "parts": [{"type": "text", "content": m["content"]}]})
            else:
                out.append(m)
        return out
    return messages


class LlmCall:
    """One inference: a ``chat {model}`` CLIENT span. Also the object ``llm_call()`` yields.

    ``record(response)`` reads usage and response metadata from a response object, a dict or a
    stream chunk; it may be called several times (values merge).
    """

    __slots__ = ("_done", "_idata", "_text", "ctx", "first_chunk_s", "messages", "model", "operation",
                 "provider", "sc", "stream", "usage")

    def __init__(self, provider: str, model: str | None, operation: str = names.OP_CHAT,
                 *, stream: bool = False, current: bool = True, messages: Any = None) -> None:
        s = state()
        run = current_run()
        self.provider = provider
        self.model = model
        self.operation = operation
        self.stream = stream
        self.usage = Usage()
        self.first_chunk_s: float | None = None
        self.messages = messages if s.capture.any else None
        self._text = s.capture.any  # read the output text only when it may be captured
        self._done = False
        attrs: dict[str, Any] = {
            names.OPERATION_NAME: operation,
            names.PROVIDER_NAME: provider,
            names.SPAN_KIND: "llm",
        }
        if model:
            attrs[names.REQUEST_MODEL] = model
        if stream:
            attrs[names.REQUEST_STREAM] = True
        if messages is not None and s.capture.on_spans:
            attrs[names.INPUT_MESSAGES] = safe_content(_semconv_messages(messages))
        extra = _inference_context_data(s.capture.any)
        self._idata = extra[1] if extra is not None else None
        span_name = f"{operation} {model}" if model else operation
        self.sc = _SpanCall(span_name, SpanKind.CLIENT, attrs, current=current, run=run, extra=extra)
        self.ctx = None if current else self.sc.ctx
        s.recorder.watch_llm(self.sc.span.get_span_context().span_id)

    def record(self, response: Any) -> None:
        """Read usage, response model, id and finish reasons from a response (or a chunk)."""
        try:
            self.usage.merge(extract_response(response, self._text))
        except Exception:  # noqa: BLE001
            internal_error("reading an LLM response")

    def chunk(self, item: Any) -> None:
        """One stream chunk: the first sets the time to first chunk; usage usually comes last."""
        if self.first_chunk_s is None:
            self.first_chunk_s = time.perf_counter() - self.sc.t0
        try:
            self.usage.merge(extract_response(item, self._text))
        except Exception:  # noqa: BLE001
            internal_error("reading a stream chunk")

    def wrap_stream(self, stream: Any) -> Any:
        """A proxy for ``stream`` feeding each chunk to this call (for ``llm_call`` blocks)."""
        return proxy_stream(stream, _ChunkSink(self))

    def finish(self, result: Any, exc: BaseException | None) -> Any:
        """End of the decorated call: a returned stream keeps the span open until it ends."""
        if exc is None and is_stream(result):
            self.sc.detach()  # the function returned: its context ends, the span goes on
            self.sc.span.set_attribute(names.REQUEST_STREAM, True)
            return proxy_stream(result, self)
        if result is not None:
            u = self.usage
            if u.response_id is None and u.input_tokens is None and not u.finish_reasons:
                extract_response(result, self._text, into=u)  # the common case: nothing read yet
            else:
                u.merge(extract_response(result, self._text))
        self.complete(exc)
        return None

    def complete(self, exc: BaseException | None) -> None:
        """End the span and record metrics and events (once)."""
        if self._done:
            return
        self._done = True
        try:
            self._complete(exc)
        except RunFailed:
            raise
        except Exception:  # noqa: BLE001
            internal_error("ending an inference span")

    def _complete(self, exc: BaseException | None) -> None:
        s = state()
        u = self.usage
        span = self.sc.span
        enriched = self._merge_inner()
        if enriched:
            span.set_attribute(names.ENRICHED_BY, "opentelemetry-util-genai")
        # Another instrumentation's span nested in ours already carries the usage (OpenLLMetry, the
        # Anthropic SDK's own tracing ...): our span says so instead of repeating the counts, so sums
        # over spans stay right. Token metrics are left to it only when it records them itself (the
        # opentelemetry-instrumentation-* packages do; an SDK's native tracing does not).
        delegated = s.recorder.delegated(span.get_span_context().span_id)
        metrics_delegated = delegated is not None and delegated.startswith(_METRIC_EMITTING_SCOPES)
        if delegated:
            span.set_attribute(names.DELEGATED_TO, delegated)
        else:
            set_plain_attributes(span, u.span_attributes())
        if self.first_chunk_s is not None:
            span.set_attribute(names.RESPONSE_TIME_TO_FIRST_CHUNK, self.first_chunk_s)
        output = (_semconv_messages(u.output_text, "assistant")
                  if u.output_text is not None and s.capture.any else None)
        if output is not None and s.capture.on_spans:
            span.set_attribute(names.OUTPUT_MESSAGES, safe_content(output))
        err_type = fq_exception_type(exc) if exc is not None else None
        is_rate_limited = exc is not None and _is_rate_limit(exc)
        if s.capture.on_events:
            self._details_event(output)
        if exc is not None:
            self._exception_event(exc)
        seconds = self.sc.end(exc)
        m_attrs: dict[str, Any] = {names.OPERATION_NAME: self.operation,
                                   names.PROVIDER_NAME: self.provider}
        if self.model:
            m_attrs[names.REQUEST_MODEL] = self.model
        if u.response_model:
            m_attrs[names.RESPONSE_MODEL] = u.response_model
        inst = s.instruments
        run = self.sc.run
        if not metrics_delegated:
            for token_type, n in (("input", u.input_tokens), ("output", u.output_tokens)):
                if n is not None:
                    inst.token_usage.record(n, {**m_attrs, names.TOKEN_TYPE: token_type})
                    if run is not None:
                        inst.agent_tokens.add(n, {names.AGENT_NAME: run.agent_name,
                                                  names.REQUEST_MODEL: self.model or "",
                                                  names.TOKEN_TYPE: token_type})
        if self.first_chunk_s is not None:
            inst.time_to_first_chunk.record(self.first_chunk_s, m_attrs)
        inst.operation_duration.record(
            seconds, {**m_attrs, names.ERROR_TYPE: err_type} if err_type else m_attrs)
        if is_rate_limited:
            inst.rate_limits.add(1, {names.PROVIDER_NAME: self.provider})
        if run is None:
            return
        run._count_inference(failed=exc is not None, provider=self.provider)
        if is_rate_limited:
            run._record(names.EV_RATE_LIMITED, "model",
                        {"endpoint": self.provider, "retry_after_s": _retry_after(exc)}, span)
        run._record(names.EV_MODEL_CALL, "model", {
            "provider": self.provider, "model": u.response_model or self.model,
            "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "cache_read_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens,
            "duration_ms": round(seconds * 1000, 3), "finish_reason": (u.finish_reasons or [None])[0],
            "error": scrub(str(exc))[0] if exc else None, "error_type": err_type,
            "delegated_to": delegated}, span)
        run.add_tokens((u.input_tokens or 0) + (u.output_tokens or 0))  # may raise RunFailed

    def _merge_inner(self) -> bool:
        """Take what a suppressed util-genai instrumentation published (only what we lack)."""
        d = self._idata
        if d is None or d.provider_name is None:
            return False
        u = self.usage
        pairs = (("input_tokens", d.usage_input_tokens), ("output_tokens", d.usage_output_tokens),
                 ("cache_read_tokens", d.usage_cache_read_input_tokens),
                 ("cache_write_tokens", d.usage_cache_write_input_tokens),
                 ("reasoning_tokens", d.usage_reasoning_output_tokens),
                 ("response_model", d.response_model), ("response_id", d.response_id))
        for attr, value in pairs:
            if getattr(u, attr) is None and value is not None:
                setattr(u, attr, value)
        if not u.finish_reasons and d.response_finish_reasons:
            u.finish_reasons = list(d.response_finish_reasons)
        if self.first_chunk_s is None and d.response_time_to_first_chunk is not None:
            self.first_chunk_s = d.response_time_to_first_chunk
        span = self.sc.span
        for key, value in ((names.SERVER_ADDRESS, d.server_address), (names.SERVER_PORT, d.server_port),
                           (names.REQUEST_MAX_TOKENS, d.request_max_tokens),
                           (names.REQUEST_TEMPERATURE, d.request_temperature)):
            if value is not None:
                span.set_attribute(key, value)
        if d.request_stream:
            span.set_attribute(names.REQUEST_STREAM, True)
        return True

    def _event_attrs(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {names.OPERATION_NAME: self.operation, names.PROVIDER_NAME: self.provider}
        if self.model:
            attrs[names.REQUEST_MODEL] = self.model
        run = self.sc.run
        if run is not None:  # the run drill-down's log panel filters on these
            attrs[names.RUN_ID] = run.run_id
            attrs[names.CONVERSATION_ID] = run.conversation_id
        return attrs

    def _details_event(self, output: Any) -> None:
        """``gen_ai.client.inference.operation.details``: the inference with its content (opt-in)."""
        attrs = self._event_attrs()
        attrs.update(self.usage.span_attributes())
        if self.messages is not None:
            attrs[names.INPUT_MESSAGES] = safe_content(_semconv_messages(self.messages))
        if output is not None:
            attrs[names.OUTPUT_MESSAGES] = safe_content(output)
        state().logger.emit(event_name=names.EV_INFERENCE_DETAILS, attributes=attrs,
                            context=self.sc.ctx)

    def _exception_event(self, exc: BaseException) -> None:
        """``gen_ai.client.operation.exception`` (WARN): type, scrubbed message and stack trace."""
        attrs = self._event_attrs()
        attrs[names.EXCEPTION_TYPE] = fq_exception_type(exc)
        attrs[names.EXCEPTION_MESSAGE] = truncate(scrub(str(exc))[0], 2048)
        stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        attrs[names.EXCEPTION_STACKTRACE] = truncate(scrub(stack)[0])
        state().logger.emit(event_name=names.EV_OPERATION_EXCEPTION, attributes=attrs,
                            severity_number=SeverityNumber.WARN, severity_text="WARN",
                            context=self.sc.ctx)


def _status_code(exc: BaseException) -> Any:
    return getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)


def _is_rate_limit(exc: BaseException) -> bool:
    """HTTP 429 (OpenAI / Anthropic ``RateLimitError`` and anything with ``status_code == 429``)."""
    return _status_code(exc) == 429 or "RateLimit" in type(exc).__name__


def _retry_after(exc: BaseException | None) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    try:
        return float(headers.get("retry-after")) if headers else None
    except (TypeError, ValueError):
        return None


def llm(provider: str, model: str | None = None, *, operation: str = names.OP_CHAT,
        messages_arg: str | None = None) -> Callable[[F], F]:
    """An LLM call: ``chat {model}`` CLIENT span with usage read from the returned response.

    Works on functions returning OpenAI / Anthropic response objects or plain dicts, on functions
    returning a stream (``openai.Stream``, ``anthropic.AsyncStream``, any (async) iterator: the span
    ends when the stream does), and on (async) generators yielding chunks. Time to first chunk is
    recorded for streams. ``model=None`` takes the call's ``model=`` keyword argument.
    ``messages_arg`` names the parameter holding the prompt (captured only when content capture
    allows).
    """

    def decorate(fn: F) -> F:
        is_gen = _is_gen(fn)
        bind = _Binder(fn) if messages_arg else None

        def start(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
            msgs = None
            if bind is not None and state().capture.any:
                msgs = bind(args, kwargs).get(messages_arg or "")
            m = kwargs.get("model") if model is None else model
            return LlmCall(provider, m, operation, stream=is_gen, current=not is_gen, messages=msgs)

        return wrap(fn, start)

    return decorate


class llm_call:
    """Context-manager form of ``@llm``::

        with llm_call("openai", "gpt-4o", messages=msgs) as call:
            resp = client.chat.completions.create(model="gpt-4o", messages=msgs)
            call.record(resp)

    For a stream, ``call.chunk(c)`` per chunk (first one sets the time to first chunk), or
    ``stream = call.wrap_stream(stream)``. Works with ``async with`` too.
    """

    def __init__(self, provider: str, model: str | None = None, *, operation: str = names.OP_CHAT,
                 stream: bool = False, messages: Any = None) -> None:
        self._args = (provider, model, operation, stream, messages)
        self.call: LlmCall | None = None

    def __enter__(self) -> LlmCall:
        provider, model, operation, stream, messages = self._args
        try:
            self.call = LlmCall(provider, model, operation, stream=stream, messages=messages)
        except Exception:  # noqa: BLE001
            internal_error("starting an llm_call")
            self.call = _NullLlmCall()
        return self.call

    def __exit__(self, et: Any, ev: BaseException | None, tb: Any) -> None:
        if self.call is not None and not isinstance(self.call, _NullLlmCall):
            self.call.complete(ev)

    async def __aenter__(self) -> LlmCall:
        return self.__enter__()

    async def __aexit__(self, et: Any, ev: BaseException | None, tb: Any) -> None:
        self.__exit__(et, ev, tb)


class _ChunkSink:
    __slots__ = ("call",)

    def __init__(self, call: LlmCall) -> None:
        self.call = call

    def chunk(self, item: Any) -> None:
        self.call.chunk(item)

    def complete(self, exc: BaseException | None) -> None:
        return None  # the ``with llm_call(...)`` block ends the span


class _NullLlmCall(LlmCall):
    """What ``llm_call`` yields when starting the span failed: every method is a no-op."""

    def __init__(self) -> None:  # deliberately skips LlmCall.__init__: nothing to record
        self.usage = Usage()
        self._text = False

    def wrap_stream(self, stream: Any) -> Any:
        return stream

    def record(self, response: Any) -> None:
        return None

    def chunk(self, item: Any) -> None:
        return None

    def complete(self, exc: BaseException | None) -> None:
        return None
