"""One wrapper for the four kinds of function: sync, async, generator, async generator.

A decorator supplies ``start(args, kwargs) -> Call``. The wrapper calls ``call.chunk(item)`` for each
item a generator yields and ``call.finish(result, exc)`` exactly once; ``finish`` may return a
replacement for the result (``@llm`` returns a stream proxy that ends the span when the stream ends).

Generators are stepped, not looped: the call's OpenTelemetry context (``call.ctx``) is attached only
while the generator body runs and detached before each item goes back to the consumer, so spans
created inside the body nest under the generator's span while the consumer's own context stays
untouched. ``send()``, ``throw()`` and ``close()`` reach the wrapped generator as they would the
original, and a consumer that stops early (``GeneratorExit``) ends the span without an error.

The user's exception passes through unmodified (same object, same traceback); errors inside
telemetry are reported with ``internal_error`` and swallowed. ``RunFailed`` raised by telemetry is the
one exception: the user asked for it (budget enforcement with ``on_budget="raise"``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any, Protocol, TypeVar

from opentelemetry import context as otel_context
from opentelemetry.context import Context

from ._runtime import RunFailed, internal_error

F = TypeVar("F", bound=Callable[..., Any])


class Call(Protocol):
    ctx: Context | None

    def chunk(self, item: Any) -> None: ...
    def finish(self, result: Any, exc: BaseException | None) -> Any: ...


class _NoCall:
    ctx: Context | None = None

    def chunk(self, item: Any) -> None:
        return None

    def finish(self, result: Any, exc: BaseException | None) -> Any:
        return None


NO_CALL = _NoCall()


def _start(start: Callable[[tuple[Any, ...], dict[str, Any]], Call], args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> Call:
    try:
        return start(args, kwargs)
    except RunFailed:
        raise  # an enforced budget refused the call (on_budget="raise")
    except Exception:  # noqa: BLE001
        internal_error("starting a span")
        return NO_CALL


def finish_call(call: Call, result: Any, exc: BaseException | None) -> Any:
    """``call.finish`` that never raises into the host (except a requested ``RunFailed``)."""
    try:
        return call.finish(result, exc)
    except RunFailed:
        if exc is not None:
            return None  # the user's own exception wins
        raise
    except Exception:  # noqa: BLE001
        internal_error("ending a span")
        return None


def chunk_call(call: Call, item: Any) -> None:
    try:
        call.chunk(item)
    except Exception:  # noqa: BLE001
        internal_error("recording a chunk")


def _attach(ctx: Context | None) -> object | None:
    return otel_context.attach(ctx) if ctx is not None else None


def _detach(token: object | None) -> None:
    if token is not None:
        try:
            otel_context.detach(token)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - detaching in another context only warns
            pass


def step_generator(gen: Generator[Any, Any, Any], call: Call) -> Generator[Any, Any, Any]:
    """Drive ``gen`` on behalf of a consumer, with the call's context attached while it runs."""
    send_value: Any = None
    throw_exc: BaseException | None = None
    while True:
        token = _attach(call.ctx)
        try:
            if throw_exc is not None:
                exc, throw_exc = throw_exc, None
                item = gen.throw(exc)
            else:
                item = gen.send(send_value)
        except StopIteration as stop:
            _detach(token)
            finish_call(call, None, None)
            return stop.value
        except BaseException as exc:
            _detach(token)
            finish_call(call, None, exc)
            raise
        _detach(token)
        chunk_call(call, item)
        try:
            send_value = yield item
        except GeneratorExit:
            token = _attach(call.ctx)
            try:
                gen.close()
            finally:
                _detach(token)
                finish_call(call, None, None)
            raise
        except BaseException as exc:  # noqa: BLE001 - thrown in by the consumer: goes to the body
            throw_exc = exc
            send_value = None


def wrap(fn: F, start: Callable[[tuple[Any, ...], dict[str, Any]], Call]) -> F:
    if inspect.isasyncgenfunction(fn):

        @functools.wraps(fn)
        async def agen_wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
            # The twin of step_generator, inline: an async generator cannot delegate with
            # ``yield from``, and the wrapper must stay an async generator function for callers
            # (frameworks branch on inspect.isasyncgenfunction).
            call = _start(start, args, kwargs)
            agen = fn(*args, **kwargs)
            send_value: Any = None
            throw_exc: BaseException | None = None
            while True:
                token = _attach(call.ctx)
                try:
                    if throw_exc is not None:
                        exc, throw_exc = throw_exc, None
                        item = await agen.athrow(exc)
                    else:
                        item = await agen.asend(send_value)
                except StopAsyncIteration:
                    _detach(token)
                    finish_call(call, None, None)
                    return
                except BaseException as exc:
                    _detach(token)
                    finish_call(call, None, exc)
                    raise
                _detach(token)
                chunk_call(call, item)
                try:
                    send_value = yield item
                except GeneratorExit:
                    token = _attach(call.ctx)
                    try:
                        await agen.aclose()
                    finally:
                        _detach(token)
                        finish_call(call, None, None)
                    raise
                except BaseException as exc:  # noqa: BLE001 - thrown in by the consumer: goes to the body
                    throw_exc = exc
                    send_value = None

        return agen_wrapper  # type: ignore[return-value]

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            # ``yield from`` forwards send/throw/close; the span starts when iteration does.
            return (yield from step_generator(fn(*args, **kwargs), _start(start, args, kwargs)))

        return gen_wrapper  # type: ignore[return-value]

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            call = _start(start, args, kwargs)
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                finish_call(call, None, exc)
                raise
            out = finish_call(call, result, None)
            return result if out is None else out

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _start(start, args, kwargs)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            finish_call(call, None, exc)
            raise
        out = finish_call(call, result, None)
        return result if out is None else out

    return sync_wrapper  # type: ignore[return-value]

