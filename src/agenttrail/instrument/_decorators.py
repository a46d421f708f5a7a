"""``@node``, ``@tool`` and ``@llm``: GenAI spans, events and metrics from a decorator."""

from __future__ import annotations

import inspect
import itertools
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.genai.utils import fq_exception_type

from .. import names
from ._content import input_hash, safe_content, scrub, truncate
from ._run import Run, current_run
from ._runtime import state
from ._usage import Usage, extract_response
from ._wrap import Call, wrap

F = TypeVar("F", bound=Callable[..., Any])
_call_ids = itertools.count(1)


def _bind(sig: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any],
          skip_first: bool) -> dict[str, Any]:
    if sig is None:
        return {"args": list(args), "kwargs": kwargs}
    try:
        bound = sig.bind_partial(*args, **kwargs)
    except TypeError:
        return {"args": list(args), "kwargs": kwargs}
    out = dict(bound.arguments)
    if skip_first and out:
        out.pop(next(iter(out)))
    return out


def _signature(fn: Callable[..., Any]) -> tuple[inspect.Signature | None, bool]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None, False
    params = list(sig.parameters)
    return sig, bool(params) and params[0] in ("self", "cls")


class _SpanCall:
    """Shared span bookkeeping: start, make current, end with status."""

    __slots__ = ("run", "span", "t0", "token")

    def __init__(self, name: str, kind: SpanKind, attrs: dict[str, Any], *, current: bool) -> None:
        s = state()
        self.run: Run | None = current_run()
        self.span: Span = s.tracer.start_span(name, kind=kind, attributes=attrs)
        self.token = (otel_context.attach(trace.set_span_in_context(self.span))
                      if current else None)
        self.t0 = time.perf_counter()

    def end(self, exc: BaseException | None, error_type: str | None = None,
            message: str | None = None) -> float:
        seconds = time.perf_counter() - self.t0
        if exc is not None or error_type is not None:
            etype = error_type or fq_exception_type(exc) if exc is not None else error_type
            self.span.set_attribute(names.ERROR_TYPE, etype or "_OTHER")
            desc = message if message is not None else (scrub(str(exc))[0] if exc else "")
            self.span.set_status(Status(StatusCode.ERROR, truncate(desc, 1024)))
        if self.token is not None:
            try:
                otel_context.detach(self.token)  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - detaching in a different context only warns
                pass
        self.span.end()
        return seconds


# ---------------------------------------------------------------------------------------------
# @node


def node(name: str | None = None) -> Callable[[F], F]:
    """A harness or graph node: one span per step, nested under the run, with node events."""

    def decorate(fn: F) -> F:
        node_name = name or fn.__name__
        attrs = {names.NODE_NAME: node_name, names.SPAN_KIND: "node"}
        is_gen = inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)

        class NodeCall:
            __slots__ = ("sc",)

            def __init__(self) -> None:
                self.sc = _SpanCall(node_name, SpanKind.INTERNAL, dict(attrs), current=not is_gen)
                if self.sc.run is not None:
                    self.sc.run.event(names.EV_NODE_STARTED, actor="harness",
                                      data={"node": node_name}, span=self.sc.span, emit_log=False)

            def chunk(self, item: Any) -> None:
                return None

            def finish(self, result: Any, exc: BaseException | None) -> None:
                seconds = self.sc.end(exc)
                if self.sc.run is not None:
                    self.sc.run.event(names.EV_NODE_FINISHED, actor="harness", span=self.sc.span,
                                      emit_log=False, data={
                                          "node": node_name, "status": "error" if exc else "ok",
                                          "duration_ms": round(seconds * 1000, 3),
                                          "error": type(exc).__name__ if exc else None})

        return wrap(fn, lambda a, k: NodeCall())

    return decorate


# ---------------------------------------------------------------------------------------------
# @tool


def _tool_failure(result: Any) -> tuple[str, str, int | None] | None:
    """A tool that *returns* a failure (non-zero exit code) instead of raising one."""
    code: Any = None
    stderr: Any = None
    if isinstance(result, Mapping):
        code = result.get("exit_code", result.get("returncode"))
        stderr = result.get("stderr") or result.get("error")
    else:
        code = getattr(result, "exit_code", getattr(result, "returncode", None))
        stderr = getattr(result, "stderr", None)
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else str(stderr or "")
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        msg = lines[-1] if lines else f"exit code {code}"
        if len(lines) > 1:
            # the most telling line is usually the first error line, e.g. "npm ERR! code ERESOLVE"
            errs = [ln for ln in lines if "err" in ln.lower()]
            msg = errs[0] if errs else msg
        return "tool_error", scrub(msg)[0], code
    return None


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
    ``returncode``) with ``n != 0`` is recorded as failed; pass ``failure=`` to decide otherwise.
    """
    if callable(name):
        return tool()(name)
    detect_failure = failure or _tool_failure

    def decorate(fn: F) -> F:
        tool_name = name or fn.__name__
        sig, skip_first = _signature(fn)
        is_gen = inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)
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
            __slots__ = ("arguments", "call_id", "chunks", "ihash", "sc")

            def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
                s = state()
                self.arguments = _bind(sig, args, kwargs, skip_first)
                self.ihash = input_hash(self.arguments)
                run = current_run()
                self.call_id = f"call_{next(_call_ids):06d}"
                attrs = dict(base)
                attrs[names.TOOL_CALL_ID] = self.call_id
                attrs[names.TOOL_INPUT_HASH] = self.ihash
                ikey: str | None = None
                if idempotency_key is not None:
                    ikey = (idempotency_key(*args, **kwargs) if callable(idempotency_key)
                            else idempotency_key)
                    attrs[names.TOOL_IDEMPOTENCY_KEY] = ikey
                if run is not None:
                    attrs[names.AGENT_NAME] = run.agent_name
                if s.capture.on_spans:
                    attrs[names.TOOL_CALL_ARGUMENTS] = safe_content(self.arguments)
                self.sc = _SpanCall(span_name, SpanKind.INTERNAL, attrs, current=not is_gen)
                self.chunks: list[Any] | None = [] if is_gen else None
                if run is not None:
                    run.tool_calls += 1
                    data: dict[str, Any] = {
                        "tool": tool_name, "call_id": self.call_id, "input_hash": self.ihash,
                        "side_effect": side_effect, "idempotency_key": ikey}
                    if s.capture.any:
                        data["arguments"] = safe_content(self.arguments)
                    run.event(names.EV_TOOL_STARTED, actor="tool", data=data, span=self.sc.span)

            def chunk(self, item: Any) -> None:
                if self.chunks is not None and len(self.chunks) < 1000:
                    self.chunks.append(item)

            def finish(self, result: Any, exc: BaseException | None) -> None:
                s = state()
                if self.chunks is not None:
                    result = self.chunks
                failed = None if exc is not None else detect_failure(result)
                if s.capture.on_spans and exc is None:
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
                m_attrs = dict(metric_attrs)
                run = self.sc.run
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
                    run.event(names.EV_TOOL_FINISHED, actor="tool", data=data, span=self.sc.span)

        return wrap(fn, ToolCall)

    return decorate


def _exit_code(result: Any) -> int | None:
    if isinstance(result, Mapping):
        code = result.get("exit_code", result.get("returncode"))
    else:
        code = getattr(result, "exit_code", getattr(result, "returncode", None))
    return code if isinstance(code, int) and not isinstance(code, bool) else None


# ---------------------------------------------------------------------------------------------
# @llm


class LlmCall:
    """One inference: a ``chat {model}`` CLIENT span. Also the object ``llm_call()`` yields."""

    def __init__(self, provider: str, model: str | None, operation: str = names.OP_CHAT,
                 *, stream: bool = False, current: bool = True,
                 messages: Any = None) -> None:
        s = state()
        self.provider = provider
        self.model = model
        self.operation = operation
        self.stream = stream
        self.usage = Usage()
        self.first_chunk_s: float | None = None
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
            attrs[names.INPUT_MESSAGES] = safe_content(messages)
        span_name = f"{operation} {model}" if model else operation
        self.sc = _SpanCall(span_name, SpanKind.CLIENT, attrs, current=current)
        s.recorder.watch_llm(self.sc.span.get_span_context().span_id)

    def record(self, response: Any) -> None:
        """Read usage, response model, id and finish reasons from a response (or a chunk)."""
        self.usage.merge(extract_response(response))

    def chunk(self, item: Any) -> None:
        if self.first_chunk_s is None:
            self.first_chunk_s = time.perf_counter() - self.sc.t0
        self.record(item)

    def finish(self, result: Any, exc: BaseException | None) -> None:
        s = state()
        if result is not None:
            self.record(result)
        u = self.usage
        span = self.sc.span
        delegated = s.recorder.delegated(span.get_span_context().span_id)
        if delegated:
            span.set_attribute(names.DELEGATED_TO, delegated)
        else:
            for key, value in u.span_attributes().items():
                span.set_attribute(key, value)
        if self.first_chunk_s is not None:
            span.set_attribute(names.RESPONSE_TIME_TO_FIRST_CHUNK, self.first_chunk_s)
        if u.output_text is not None and s.capture.on_spans:
            span.set_attribute(names.OUTPUT_MESSAGES, safe_content(u.output_text))
        err_type = fq_exception_type(exc) if exc is not None else None
        is_rate_limited = exc is not None and _is_rate_limit(exc)
        seconds = self.sc.end(exc)
        m_attrs: dict[str, Any] = {names.OPERATION_NAME: self.operation,
                                   names.PROVIDER_NAME: self.provider}
        if self.model:
            m_attrs[names.REQUEST_MODEL] = self.model
        if u.response_model:
            m_attrs[names.RESPONSE_MODEL] = u.response_model
        inst = s.instruments
        run = self.sc.run
        if not delegated:
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
        if run is not None:
            run.inference_calls += 1
            if not delegated:
                run.add_tokens((u.input_tokens or 0) + (u.output_tokens or 0))
            if is_rate_limited:
                run.event("rate_limited", actor="model", span=span,
                          data={"endpoint": self.provider, "retry_after_s": _retry_after(exc)})
            run.event(names.EV_MODEL_CALL, actor="model", span=span, data={
                "provider": self.provider, "model": u.response_model or self.model,
                "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                "cache_read_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens,
                "duration_ms": round(seconds * 1000, 3), "finish_reason": (u.finish_reasons or [None])[0],
                "error": scrub(str(exc))[0] if exc else None, "delegated_to": delegated})


def _is_rate_limit(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    return status == 429 or "RateLimit" in type(exc).__name__


def _retry_after(exc: BaseException | None) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    try:
        return float(headers.get("retry-after")) if headers else None
    except (TypeError, ValueError):
        return None


def llm(provider: str, model: str | None = None, *, operation: str = names.OP_CHAT,
        messages_arg: str | None = None) -> Callable[[F], F]:
    """An LLM call: ``chat {model}`` CLIENT span with usage read from the returned response.

    Works on functions returning OpenAI / Anthropic response objects or plain dicts, and on
    (async) generators yielding stream chunks (time to first chunk recorded). ``messages_arg`` names
    the parameter holding the prompt messages, captured only when content capture allows.
    """

    def decorate(fn: F) -> F:
        is_gen = inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)
        sig, _ = _signature(fn) if messages_arg else (None, False)

        def start(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
            msgs = None
            if messages_arg and sig is not None and state().capture.on_spans:
                try:
                    msgs = sig.bind_partial(*args, **kwargs).arguments.get(messages_arg)
                except TypeError:
                    msgs = None
            m = kwargs.get("model") if model is None else model
            return LlmCall(provider, m, operation, stream=is_gen, current=not is_gen, messages=msgs)

        return wrap(fn, start)

    return decorate


class llm_call:
    """Context-manager form of ``@llm``: ``with llm_call("openai", "gpt-4o") as c: c.record(resp)``."""

    def __init__(self, provider: str, model: str | None = None, *, operation: str = names.OP_CHAT,
                 stream: bool = False) -> None:
        self._args = (provider, model, operation, stream)
        self.call: LlmCall | None = None

    def __enter__(self) -> LlmCall:
        provider, model, operation, stream = self._args
        self.call = LlmCall(provider, model, operation, stream=stream)
        return self.call

    def __exit__(self, et: Any, ev: BaseException | None, tb: Any) -> None:
        if self.call is not None:
            try:
                self.call.finish(None, ev)
            except Exception:  # noqa: BLE001
                from ._runtime import internal_error

                internal_error("ending an llm_call")

    async def __aenter__(self) -> LlmCall:
        return self.__enter__()

    async def __aexit__(self, et: Any, ev: BaseException | None, tb: Any) -> None:
        self.__exit__(et, ev, tb)
