"""One wrapper for the four kinds of function: sync, async, generator, async generator.

A decorator supplies ``start(args, kwargs) -> Call``; the wrapper calls ``call.chunk(item)`` for each
item a generator yields and ``call.finish(result, exc)`` exactly once. The user's exception passes
through unmodified (same object, same traceback); errors inside telemetry are reported with
``internal_error`` and swallowed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol, TypeVar

from ._runtime import internal_error

F = TypeVar("F", bound=Callable[..., Any])


class Call(Protocol):
    def chunk(self, item: Any) -> None: ...
    def finish(self, result: Any, exc: BaseException | None) -> None: ...


class _NoCall:
    def chunk(self, item: Any) -> None:
        return None

    def finish(self, result: Any, exc: BaseException | None) -> None:
        return None


NO_CALL = _NoCall()


def wrap(fn: F, start: Callable[[tuple[Any, ...], dict[str, Any]], Call]) -> F:
    def _start(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
        try:
            return start(args, kwargs)
        except Exception:  # noqa: BLE001
            internal_error("starting a span")
            return NO_CALL

    def _finish(call: Call, result: Any, exc: BaseException | None) -> None:
        try:
            call.finish(result, exc)
        except Exception:  # noqa: BLE001
            internal_error("ending a span")

    def _chunk(call: Call, item: Any) -> None:
        try:
            call.chunk(item)
        except Exception:  # noqa: BLE001
            internal_error("recording a chunk")

    if inspect.isasyncgenfunction(fn):

        @functools.wraps(fn)
        async def agen_wrapper(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            call = _start(args, kwargs)
            try:
                async for item in fn(*args, **kwargs):
                    _chunk(call, item)
                    yield item
            except BaseException as exc:
                _finish(call, None, exc)
                raise
            _finish(call, None, None)

        return agen_wrapper  # type: ignore[return-value]

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
            call = _start(args, kwargs)
            try:
                for item in fn(*args, **kwargs):
                    _chunk(call, item)
                    yield item
            except BaseException as exc:
                _finish(call, None, exc)
                raise
            _finish(call, None, None)

        return gen_wrapper  # type: ignore[return-value]

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            call = _start(args, kwargs)
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                _finish(call, None, exc)
                raise
            _finish(call, result, None)
            return result

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _start(args, kwargs)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            _finish(call, None, exc)
            raise
        _finish(call, result, None)
        return result

    return sync_wrapper  # type: ignore[return-value]
