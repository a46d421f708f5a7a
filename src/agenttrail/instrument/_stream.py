"""Proxies for streams an ``@llm`` function *returns* (``openai.Stream``, ``anthropic.AsyncStream`` ...).

The inference span stays open while the caller iterates and ends when the stream ends, fails or is
closed; each chunk is read for usage, response id/model and finish reasons, and the first one sets
the time to first chunk. Everything else (``.response``, ``.close()``, ``with``) reaches the real
stream, so the proxy can stand in for it.
"""

from __future__ import annotations

from typing import Any, Protocol


class _Sink(Protocol):
    def chunk(self, item: Any) -> None: ...
    def complete(self, exc: BaseException | None) -> None: ...


def is_stream(result: Any) -> bool:
    """An iterator or async iterator of chunks (not a response object, a mapping or a string)."""
    t = type(result)  # str, bytes, dicts, lists and response models have no __next__
    known = _stream_types.get(t)
    if known is None:
        # hasattr on a pydantic model class raises and catches inside its metaclass (~1.6 µs per
        # @llm call): answered once per type
        known = hasattr(t, "__next__") or hasattr(t, "__anext__")
        if len(_stream_types) < 512:
            _stream_types[t] = known
    return known


_stream_types: dict[type, bool] = {}


def proxy_stream(stream: Any, sink: _Sink) -> Any:
    if hasattr(type(stream), "__anext__"):
        return AsyncStreamProxy(stream, sink)
    return StreamProxy(stream, sink)


class _Base:
    __slots__ = ("_done", "_sink", "_stream")

    def __init__(self, stream: Any, sink: _Sink) -> None:
        self._stream = stream
        self._sink = sink
        self._done = False

    def _complete(self, exc: BaseException | None) -> None:
        if not self._done:
            self._done = True
            self._sink.complete(exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __repr__(self) -> str:
        return f"<agenttrail stream proxy for {self._stream!r}>"


class StreamProxy(_Base):
    __slots__ = ()

    def __iter__(self) -> StreamProxy:
        return self

    def __next__(self) -> Any:
        try:
            item = next(self._stream)
        except StopIteration:
            self._complete(None)
            raise
        except BaseException as exc:
            self._complete(exc)
            raise
        self._sink.chunk(item)
        return item

    def __enter__(self) -> StreamProxy:
        enter = getattr(self._stream, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(self, et: Any, ev: BaseException | None, tb: Any) -> Any:
        try:
            exit_ = getattr(self._stream, "__exit__", None)
            return exit_(et, ev, tb) if exit_ is not None else None
        finally:
            self._complete(ev)

    def close(self) -> None:
        try:
            close = getattr(self._stream, "close", None)
            if close is not None:
                close()
        finally:
            self._complete(None)


class AsyncStreamProxy(_Base):
    __slots__ = ()

    def __aiter__(self) -> AsyncStreamProxy:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._stream.__anext__()
        except StopAsyncIteration:
            self._complete(None)
            raise
        except BaseException as exc:
            self._complete(exc)
            raise
        self._sink.chunk(item)
        return item

    async def __aenter__(self) -> AsyncStreamProxy:
        enter = getattr(self._stream, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, et: Any, ev: BaseException | None, tb: Any) -> Any:
        try:
            exit_ = getattr(self._stream, "__aexit__", None)
            return (await exit_(et, ev, tb)) if exit_ is not None else None
        finally:
            self._complete(ev)

    async def close(self) -> None:
        try:
            close = getattr(self._stream, "close", None) or getattr(self._stream, "aclose", None)
            if close is not None:
                await close()
        finally:
            self._complete(None)

    async def aclose(self) -> None:
        await self.close()
